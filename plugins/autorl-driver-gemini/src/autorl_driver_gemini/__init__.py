"""autorl driver backend ``gemini`` (generateContent over plain httpx)."""
