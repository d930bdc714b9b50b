-- links without its (src, dst, anchor) primary key: a key index over three strings costs about six times the
-- insert time and five times the table's own disk (and memory, once loaded) at millions of links. The update stage
-- keeps the rows distinct itself (sql/stages/merge_parse.sql).
CREATE TABLE links_kept (
    src       VARCHAR NOT NULL,
    dst       VARCHAR NOT NULL,
    anchor    VARCHAR NOT NULL,
    context   VARCHAR,
    nofollow  BOOLEAN,
    cycle     INTEGER NOT NULL
);
INSERT INTO links_kept SELECT src, dst, anchor, context, nofollow, cycle FROM links;
DROP TABLE links;
ALTER TABLE links_kept RENAME TO links;
