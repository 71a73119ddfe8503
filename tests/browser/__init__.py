"""The web pages driven in a browser (chromium, by executable path)."""
