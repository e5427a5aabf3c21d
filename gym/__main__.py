from gym.cli import main

main()
