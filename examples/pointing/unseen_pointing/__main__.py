from .make import main

main()
