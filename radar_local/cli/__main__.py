from radar_local.cli import main

if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process that re-imports __main__
    main()
