from nbtext.cli.entry import main

main()
