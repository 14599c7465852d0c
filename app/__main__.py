from j6doctor.cli import main

main()
