// Runs each SQL statement given as an argument in an in-memory DuckDB and
// prints its rows as one JSON array per statement (numbers that do not fit
// a double are strings). Used by the Parquet tests: a real engine reads
// what iotrace writes. Needs NODE_PATH to hold @duckdb/node-api.
const { DuckDBInstance } = require('@duckdb/node-api');

(async () => {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  for (const sql of process.argv.slice(2)) {
    const result = await conn.runAndReadAll(sql);
    console.log(JSON.stringify(result.getRowObjectsJson()));
  }
})().catch((err) => {
  console.error(String(err));
  process.exit(1);
});
