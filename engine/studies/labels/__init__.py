"""Judge validation (Sociodrama Sec. 5.2): a labelling study samples the judge's updates from
saved runs, people label each one's direction from the same evidence the judge saw, and the
agreement statistics compare them. Pure: no terminal code."""
