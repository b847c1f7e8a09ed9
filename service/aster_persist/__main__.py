from .cli import main

if __name__ == "__main__":  # not when a reading process of a catch-up starts
    main()
