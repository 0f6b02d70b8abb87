from radar_local.cli.main import main

main()
