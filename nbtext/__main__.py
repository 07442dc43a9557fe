from nbtext.entry import main

main()
