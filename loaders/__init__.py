"""Loading code outside the engine: files, models and foreign formats turned into what the engine takes."""
