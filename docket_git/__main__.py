from docket_git.entry import main

main()
