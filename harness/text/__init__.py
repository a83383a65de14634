"""Text: analysis (tokenizers, stopwords, stemmers, token counts), loose normalisation for matching quotes, and the
chunking strategies that cut documents into chunks that keep their character span.
In: document texts. Out: tokens, normalised strings and chunks for gold, retrievers and windows.
"""
