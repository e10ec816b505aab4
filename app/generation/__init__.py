"""Answer layer: prompt assembly, LLM backends, citations, answerability and the streaming answer pipeline."""
