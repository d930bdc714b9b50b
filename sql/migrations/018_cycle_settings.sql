-- The settings each cycle runs with, recorded by its begin: {"values": {setting: value} for every setting,
-- "sources": {setting: where its value came from} for those not at their defaults ("file <path>",
-- "environment CRAWLCYCLE_<NAME>", "flag --<name>", "run parameter <name>")}. Its later tasks run with these values,
-- but for the settings that locate the state or shape the DAG (settings.LIVE). Cycles begun before this migration
-- keep NULL.
ALTER TABLE cycles ADD COLUMN settings JSON;
