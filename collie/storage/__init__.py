"""Storage: the campaign folder (:mod:`.campaign`: config, journal, anomaly folders), its typed records
(:mod:`.records`), the case folder (:mod:`.case`), a corpus of case folders (:mod:`.corpus`), and the rules and
atomic writes of every file and folder collie makes (:mod:`.files`)."""
