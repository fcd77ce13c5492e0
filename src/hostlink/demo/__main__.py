from hostlink.demo.server import main

main()
