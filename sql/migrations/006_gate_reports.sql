-- Gate results keep what aggregate checks observed and where the gate's HTML report (GX data docs) is.
ALTER TABLE dq_results ADD COLUMN observed VARCHAR;
ALTER TABLE dq_results ADD COLUMN report VARCHAR;
