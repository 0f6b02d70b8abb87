"""Model engines behind one small interface; heavy libraries are imported only when one is built."""
