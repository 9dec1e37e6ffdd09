"""waidec: the WAI decoder of waipy, one module per part of docs/spec/wai-format.md (README.md)."""
