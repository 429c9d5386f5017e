"""Tools over a finished run directory: the dataset card, `trajforge show`, `report`,
`publish`, `verify`, `calibrate` and the samples they browse.

None of them runs a pipeline, so this package imports no Beam (a test enforces it): they
start without Beam's ~0.7 s import and read local runs through `pipelines.files`.
The Beam layer (the build) imports from here, never the other way round.
"""
