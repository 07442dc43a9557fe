from nbtext.oneshot import main

main()
