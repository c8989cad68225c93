package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iotrace/iotrace/hist"
	"github.com/iotrace/iotrace/internal/synth"
	"github.com/iotrace/iotrace/internal/testenv"
	"github.com/iotrace/iotrace/report"
)

// duckDB runs SQL statements in DuckDB (the npm package scripts/setup
// installs) and returns each statement's rows. Without DuckDB the test is
// skipped, except in CI (CI=true or IOTRACE_REQUIRE_PRIVILEGED=1), where it
// fails: CI must check that a real engine reads what iotrace writes.
func duckDB(t *testing.T, sql ...string) [][]map[string]any {
	t.Helper()
	testenv.SkipUnderWine(t, "DuckDB's node package is a Linux build here; wine has no node.js")
	mods := os.Getenv("IOTRACE_DUCKDB_NODE_PATH")
	if mods == "" {
		mods = filepath.Join(testenv.RepoRoot(t), ".cache", "duckdb", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(mods, "@duckdb", "node-api")); err != nil {
		msg := "DuckDB (@duckdb/node-api) not found in " + mods + ": run scripts/setup, or set IOTRACE_DUCKDB_NODE_PATH"
		if os.Getenv("CI") == "true" || testenv.Required() {
			t.Fatal(msg)
		}
		t.Skip("skipped: " + msg)
	}
	cmd := exec.Command("node", append([]string{filepath.Join("testdata", "duckdb_query.cjs")}, sql...)...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("duckdb: %v\n%s", err, msg)
	}
	var res [][]map[string]any
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var rows []map[string]any
		if err := json.Unmarshal([]byte(line), &rows); err != nil {
			t.Fatalf("duckdb output of statement %d: %v\n%.300s", i, err, line)
		}
		res = append(res, rows)
	}
	if len(res) != len(sql) {
		t.Fatalf("duckdb answered %d statements of %d", len(res), len(sql))
	}
	return res
}

// num reads a DuckDB JSON value (a number, a string for big integers, or
// null) as a uint64.
func num(t *testing.T, v any) uint64 {
	t.Helper()
	switch x := v.(type) {
	case nil:
		return 0
	case float64:
		return uint64(x)
	case string:
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			t.Fatalf("duckdb number %q: %v", x, err)
		}
		return n
	}
	t.Fatalf("duckdb value %v (%T) is not a number", v, v)
	return 0
}

// opStatsSQL gives, per file, layer and op, what report --format json
// gives per op: the count, the bytes moved (as report.dataBytes counts
// them) and the exact order statistics at the ranks hist.Sketch uses for
// p50 and p99 (ceil(q*n)) among the events that completed.
const opStatsSQL = `
WITH d AS (
  SELECT filename, trace_id, host, layer, op,
         greatest(duration_ns, 0) AS dur,
         coalesce(flags, '') LIKE '%%no-completion%%' AS incomplete,
         CASE WHEN bytes IS NOT NULL THEN bytes WHEN layer = 'block' THEN size ELSE 0 END AS moved
  FROM read_parquet(%s, filename = true)
), g AS (
  SELECT filename, any_value(trace_id) AS trace_id, any_value(host) AS host, layer, op,
         count(*) AS n, sum(moved) AS b,
         list_sort(list(dur) FILTER (WHERE NOT incomplete)) AS ds
  FROM d GROUP BY filename, layer, op
)
SELECT filename, trace_id, host, layer, op, n, b, len(ds) AS nlat,
       ds[greatest(1, ceil(0.5 * len(ds)))::BIGINT] AS p50,
       ds[greatest(1, ceil(0.99 * len(ds)))::BIGINT] AS p99
FROM g ORDER BY filename, layer, op`

// checkParquetAgainstReport converts each trace to Parquet, reads all the
// Parquet files together in DuckDB, and checks per trace and op that rows,
// bytes and latency percentiles equal what report --format json says.
func checkParquetAgainstReport(t *testing.T, traces []string) {
	t.Helper()
	dir := testenv.TempDir(t)
	reports := map[string]report.Result{} // by parquet file
	var quoted []string
	var events uint64
	for i, tr := range traces {
		pq := filepath.Join(dir, fmt.Sprintf("t%d.parquet", i))
		if _, errs, code := runIotrace(t, "convert", tr, "-o", pq); code != 0 {
			t.Fatalf("convert %s: exit %d: %s", tr, code, errs)
		}
		out, errs, code := runIotrace(t, "report", tr, "--format", "json")
		if code != 0 {
			t.Fatalf("report %s: exit %d: %s", tr, code, errs)
		}
		var res report.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("report %s: %v", tr, err)
		}
		reports[pq] = res
		events += res.Trace.Events
		quoted = append(quoted, "'"+pq+"'")
	}
	files := "[" + strings.Join(quoted, ", ") + "]"
	glob := "'" + filepath.Join(dir, "*.parquet") + "'"
	res := duckDB(t,
		"SELECT count(*) AS n, count(DISTINCT trace_id) AS traces FROM read_parquet("+glob+")",
		fmt.Sprintf(opStatsSQL, files),
		"SELECT count(*) AS n FROM read_parquet("+glob+") WHERE epoch_us(ts) <> (trace_start_ns + time_ns) // 1000 OR epoch_us(trace_start) <> trace_start_ns // 1000",
	)
	if n, tr := num(t, res[0][0]["n"]), num(t, res[0][0]["traces"]); n != events || tr != uint64(len(traces)) {
		t.Errorf("DuckDB reads %d rows of %d traces from the glob; the reports count %d events of %d traces", n, tr, events, len(traces))
	}
	if n := num(t, res[2][0]["n"]); n != 0 {
		t.Errorf("%d rows whose ts is not trace_start + time_ns", n)
	}
	// The queries docs/parquet.md gives for DuckDB run over these files.
	docQueries := docsDuckDBQueries(t, glob)
	for i, rows := range duckDB(t, docQueries...) {
		if len(rows) == 0 {
			t.Errorf("docs/parquet.md DuckDB query %d returns no rows:\n%s", i+1, docQueries[i])
		}
	}

	type key struct{ file, layer, op string }
	seen := map[key]bool{}
	for _, r := range res[1] {
		k := key{r["filename"].(string), r["layer"].(string), r["op"].(string)}
		seen[k] = true
		rep, ok := reports[k.file]
		if !ok {
			t.Fatalf("DuckDB names a file the test did not write: %s", k.file)
		}
		if h, _ := r["host"].(string); h != rep.Trace.Hostname {
			t.Errorf("%s: host %q, report says %q", k.file, h, rep.Trace.Hostname)
		}
		var op *report.OpSummary
		for i := range rep.Ops {
			if rep.Ops[i].Op == k.op && rep.Ops[i].Layer == k.layer {
				op = &rep.Ops[i]
			}
		}
		if op == nil {
			if k.layer != "marker" {
				t.Errorf("%s %s/%s: %v rows, not in the report", k.file, k.layer, k.op, r["n"])
			}
			continue
		}
		n, b, nlat := num(t, r["n"]), num(t, r["b"]), num(t, r["nlat"])
		if n != op.Count || nlat != op.Latency.Count {
			t.Errorf("%s %s/%s: DuckDB counts %d rows, %d completed; report %d, %d", k.file, k.layer, k.op, n, nlat, op.Count, op.Latency.Count)
		}
		if op.Bytes != 0 && b != op.Bytes {
			t.Errorf("%s %s/%s: DuckDB sums %d bytes, report %d", k.file, k.layer, k.op, b, op.Bytes)
		}
		if nlat == 0 {
			continue
		}
		for _, p := range []struct {
			name     string
			sketch   uint64
			duckdbAt any
		}{{"p50", op.Latency.P50, r["p50"]}, {"p99", op.Latency.P99, r["p99"]}} {
			exact := num(t, p.duckdbAt)
			if d := math.Abs(float64(p.sketch) - float64(exact)); d > float64(exact)*hist.SketchRelativeError+1 {
				t.Errorf("%s %s/%s %s: report %d, exact %d: off by more than the sketch's error (1/128)", k.file, k.layer, k.op, p.name, p.sketch, exact)
			}
		}
	}
	for file, rep := range reports {
		for _, op := range rep.Ops {
			if op.Count > 0 && !seen[key{file, op.Layer, op.Op}] {
				t.Errorf("%s: the report has %d %s/%s, DuckDB none", file, op.Count, op.Layer, op.Op)
			}
		}
	}
}

// TestParquetDuckDB: Parquet converted from two real .etl files and a
// synthetic Linux trace, read together by DuckDB, agrees with the reports.
func TestParquetDuckDB(t *testing.T) {
	etl := testenv.ETLDir(t)
	lin, _ := writeSynthJSONL(t, testenv.TempDir(t), "linux.jsonl", synth.Options{Seed: 11, Events: 20000, BlockPercent: 25})
	checkParquetAgainstReport(t, []string{
		filepath.Join(etl, "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"),
		filepath.Join(etl, "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"),
		lin,
	})
}

// TestParquetDuckDBLinuxRecording: the same over a live Linux recording
// (file and block I/O of a workload that syncs to disk and reads back
// with O_DIRECT) and the two .etl files, read together.
func TestParquetDuckDBLinuxRecording(t *testing.T) {
	testenv.RequirePrivileged(t, "records a workload with eBPF")
	etl := testenv.ETLDir(t)
	dir := testenv.TempDir(t)
	data := filepath.Join(dir, "data")
	iot := filepath.Join(dir, "linux.iot")
	work := fmt.Sprintf("dd if=/dev/zero of=%[1]s bs=4096 count=256 conv=fsync status=none && "+
		"dd if=%[1]s of=/dev/null bs=4096 iflag=direct status=none && cat %[1]s > /dev/null && ls %[2]s > /dev/null", data, dir)
	if _, errs, code := runIotrace(t, "record", "-o", iot, "--", "sh", "-c", work); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	checkParquetAgainstReport(t, []string{
		iot,
		filepath.Join(etl, "perfview_win8_x64_kernel_diskio_fileio-names_clr_compressed.etl"),
		filepath.Join(etl, "filtrace_win11_kernel_diskio_fileio-names_compressed.etl"),
	})

	// record -o FILE.parquet writes the rows directly, names resolved.
	pq := filepath.Join(dir, "direct.parquet")
	_, errs, code := runIotrace(t, "record", "-o", pq, "--", "sh", "-c", "cat "+data+" > /dev/null")
	if code != 0 {
		t.Fatalf("record -o .parquet: exit %d: %s", code, errs)
	}
	if st, err := os.Stat(pq); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record -o .parquet: %v", err)
	}
	res := duckDB(t, "SELECT count(*) AS n, count(*) FILTER (WHERE op = 'open' AND path = '"+data+"' AND comm = 'cat') AS opens FROM read_parquet('"+pq+"')")
	if n, opens := num(t, res[0][0]["n"]), num(t, res[0][0]["opens"]); n == 0 || opens != 1 || !strings.Contains(errs, fmt.Sprintf("(%d rows)", n)) {
		t.Errorf("record -o .parquet: %d rows, %d opens of %s by cat; stderr: %s", n, opens, data, errs)
	}

	// With --stacks, the stack column names the frames as they load
	// (here the dynamic loader's reads of libc, and cat's own).
	spq := filepath.Join(dir, "stacks.parquet")
	if _, errs, code := runIotrace(t, "record", "-o", spq, "--stacks", "user", "--", "sh", "-c", "cat "+data+" > /dev/null"); code != 0 {
		t.Fatalf("record -o .parquet --stacks: exit %d: %s", code, errs)
	}
	res = duckDB(t, "SELECT count(*) AS reads, count(*) FILTER (WHERE stack IS NOT NULL) AS stacks, "+
		"count(*) FILTER (WHERE list_contains(list_transform(stack, f -> f LIKE '_dl_map_object%'), true)) AS named "+
		"FROM read_parquet('"+spq+"') WHERE comm = 'cat' AND op = 'read'")
	if r := res[0][0]; num(t, r["reads"]) == 0 || num(t, r["stacks"]) != num(t, r["reads"]) || num(t, r["named"]) == 0 {
		t.Errorf("record -o .parquet --stacks: cat's reads and their stacks: %v", r)
	}
}

// docsDuckDBQueries returns the statements of the DuckDB block of
// docs/parquet.md, reading glob instead of traces/**/*.parquet.
func docsDuckDBQueries(t *testing.T, glob string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "parquet.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "### DuckDB")
	if i < 0 {
		t.Fatal("docs/parquet.md has no DuckDB section")
	}
	block := doc[i:]
	start := strings.Index(block, "```sql\n")
	end := strings.Index(block[start+7:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/parquet.md: no sql block in the DuckDB section")
	}
	var out []string
	for _, stmt := range strings.Split(block[start+7:start+7+end], ";") {
		var lines []string
		for _, l := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "--") {
				lines = append(lines, l)
			}
		}
		q := strings.TrimSpace(strings.Join(lines, "\n"))
		if q == "" {
			continue
		}
		if !strings.Contains(q, "'traces/**/*.parquet'") {
			t.Fatalf("docs/parquet.md DuckDB query does not read 'traces/**/*.parquet':\n%s", q)
		}
		out = append(out, strings.ReplaceAll(q, "'traces/**/*.parquet'", glob))
	}
	if len(out) < 4 {
		t.Fatalf("docs/parquet.md: %d DuckDB queries, want the 4 the issue asks for", len(out))
	}
	return out
}
