from nbtext.cli import main

main()
