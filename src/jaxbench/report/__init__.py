"""Reports derived from run directories (events only): tables, JSON summaries."""
