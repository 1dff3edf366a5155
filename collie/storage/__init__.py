"""Storage: the campaign folder (:mod:`.campaign`: config, journal, anomaly folders), its typed records
(:mod:`.records`), the case folder (:mod:`.case`) and a corpus of case folders (:mod:`.corpus`)."""
