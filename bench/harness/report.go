package harness

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// column is one column of a table: a metric of each row's key, as
// median [min–max] over the runs.
type column struct {
	header string
	metric string
	format func(float64) string
	scale  float64 // multiplies the metric before formatting (0: 1)
}

// ratioColumn is a column of per-run ratios of a metric of each row to the
// same metric of a reference row.
type ratioColumn struct {
	header string
	metric string
	ref    string // the reference row's key
}

// row is a table row: its label and its key in the results.
type row struct{ label, key string }

// table writes a markdown table of rows with the columns.
func (r *Results) table(b *strings.Builder, rows []row, cols []column, ratios []ratioColumn) {
	b.WriteString("| |")
	for _, c := range cols {
		b.WriteString(" " + c.header + " |")
	}
	for _, c := range ratios {
		b.WriteString(" " + c.header + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---:|", len(cols)+len(ratios)))
	b.WriteString("\n")
	for _, rw := range rows {
		b.WriteString("| " + rw.label + " |")
		for _, c := range cols {
			s := r.Series(rw.key, c.metric)
			if c.scale != 0 {
				for i := range s {
					s[i] *= c.scale
				}
			}
			b.WriteString(" " + Summarize(s).Format(c.format) + " |")
		}
		for _, c := range ratios {
			b.WriteString(" " + Summarize(Ratios(r.Series(rw.key, c.metric), r.Series(c.ref, c.metric))).Format(Ratio) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// target is one of the targets of issues 13 and 23, computed run by run.
type target struct {
	name      string
	value     func(run int) float64
	atLeast   bool // met when the median is >= limit; else <= limit
	limit     float64
	format    func(float64) string
	singleRun bool // measured once, not per run
	// parts are the figures the value is made of, and keys the tasks whose
	// CPU profiles explain it: a missed target is listed with both.
	parts []figure
	keys  []string
	// why is what bounds the figure, as profiles of this machine showed
	// it, printed when the target is missed (empty: read the profiles).
	why string
}

// figure is one measured figure behind a target: a metric of a task.
type figure struct {
	label, key, metric string
	format             func(float64) string
}

// ratioTarget is a target on the per-run ratio of a metric of two tasks.
func (r *Results) ratioTarget(name string, atLeast bool, limit float64, a, b figure) target {
	return target{name: name, atLeast: atLeast, limit: limit, format: Ratio, parts: []figure{a, b}, keys: []string{a.key, b.key},
		value: func(run int) float64 { return r.Get(a.key, run, a.metric) / r.Get(b.key, run, b.metric) }}
}

func (r *Results) targets() []target {
	cfg := r.Config
	ak := func(n int, v string) string { return fmt.Sprintf("append/%d/%s", n, v) }
	ev := func(label, key string) figure { return figure{label, key, "events/s", Number} }
	rd := func(v string) figure { return ev(v, "read/"+v) }
	var ts []target
	for _, n := range cfg.Appenders {
		if n != 64 {
			continue
		}
		alts := []string{ak(64, rawVariant)}
		for _, v := range appendVariants[altStart():] {
			alts = append(alts, ak(64, v.name))
		}
		ts = append(ts,
			target{name: "durable append, 64 appenders: events/s ÷ the best alternative's", atLeast: true, limit: 2, format: Ratio,
				keys: alts, parts: []figure{ev("sessionlog raw", ak(64, rawVariant))},
				why: r.whyAppendHere(),
				value: func(run int) float64 {
					best := math.NaN()
					for _, v := range appendVariants[altStart():] {
						if x := r.Get(ak(64, v.name), run, "events/s"); math.IsNaN(best) || x > best {
							best = x
						}
					}
					return r.Get(ak(64, rawVariant), run, "events/s") / best
				}},
			target{name: "durable append, 64 appenders: events per fsync", atLeast: true, limit: 50, format: Number, keys: alts[:1],
				value: func(run int) float64 { return r.Get(ak(64, rawVariant), run, "events/fsync") }},
			withWhy(r.ratioTarget("durable append, 64 appenders: events/s ÷ the same with no fsync", true, 0.5,
				ev("sessionlog raw", ak(64, rawVariant)), ev("no fsync", ak(64, noFsyncVariant))), r.whyAppendHere()),
			// Issue 24: redaction at write costs at most 10 %.
			withWhy(r.ratioTarget("durable append, 64 appenders: events/s with redaction ÷ without", true, 0.9,
				ev("sessionlog raw", ak(64, rawVariant)), ev("unredacted", ak(64, unredactedVariant))), whyRedact),
		)
	}
	ts = append(ts, target{name: "one appender: p50 latency ÷ bare write+fdatasync's (alternating event by event)", limit: 1.1, format: Ratio,
		keys:  []string{"paired/1"},
		value: func(run int) float64 { return r.Get("paired/1", run, "p50-ratio") }})
	for _, p := range projections {
		ts = append(ts,
			withWhy(r.ratioTarget("replay into "+p.id+" ÷ sessionlog's own raw read (events/s)", true, 0.8,
				rd("sessionlog raw replay "+p.id), rd("sessionlog raw read")), whyReplay),
			withWhy(r.ratioTarget("replay into "+p.id+" ÷ encoding/json decode + the same apply", true, 5,
				rd("sessionlog raw replay "+p.id), rd("encoding/json decode + "+p.id)), whyReplayJSON),
		)
	}
	ts = append(ts,
		r.ratioTarget("raw read ÷ sonic decode (events/s)", true, 1.2, rd("sessionlog raw read"), rd("bytedance/sonic decode")),
		withWhy(r.ratioTarget("zstd read ÷ raw read", true, 0.8, rd("sessionlog zstd read"), rd("sessionlog raw read")), whyZstd),
	)
	for _, p := range projections {
		ts = append(ts, withWhy(r.ratioTarget("zstd replay into "+p.id+" ÷ raw replay", true, 0.8,
			rd("sessionlog zstd replay "+p.id), rd("sessionlog raw replay "+p.id)), whyZstd))
	}
	for _, turns := range cfg.SizeTurns {
		k := fmt.Sprintf("sizes/%d", turns)
		ts = append(ts, target{name: fmt.Sprintf("recompressed size ÷ `zstd -3`, %d turns", turns), limit: 1, format: Ratio, singleRun: true,
			value: func(run int) float64 { return r.Get(k, run, "recompressed-B") / r.Get(k, run, "zstd3-B") }})
	}
	if len(cfg.OpsSizes) > 1 {
		small, big := cfg.OpsSizes[0], cfg.OpsSizes[len(cfg.OpsSizes)-1]
		for _, v := range opsVariants {
			if strings.HasPrefix(v, "copy") || fullCheck(v) {
				continue
			}
			ts = append(ts, r.ratioTarget(fmt.Sprintf("%s: %s ÷ %s", v, Bytes(float64(big)), Bytes(float64(small))), false, 2,
				figure{Bytes(float64(big)), fmt.Sprintf("ops/%d/%s", big, v), "ns/op", Duration},
				figure{Bytes(float64(small)), fmt.Sprintf("ops/%d/%s", small, v), "ns/op", Duration}))
		}
	}
	if cfg.HugeBytes > 0 {
		size := Bytes(float64(cfg.HugeBytes))
		ts = append(ts, target{name: "Stat on the " + size + " session", limit: 10e6, format: Duration, keys: []string{"huge/Stat"},
			value: func(run int) float64 { return r.Get("huge/Stat", run, "ns/op") }})
		for _, v := range []string{"replay agent/v1", "replay transcript/v1", "verify"} {
			ts = append(ts, target{name: fmt.Sprintf("%s on the %s session: peak RSS − the projection's state", v, size), limit: 64e6, format: Bytes,
				keys:  []string{"huge/" + v},
				parts: []figure{{"peak RSS", "huge/" + v, "maxrss-B", Bytes}, {"state", "huge/" + v, "state-B", Bytes}},
				value: func(run int) float64 { return r.Get("huge/"+v, run, "maxrss-B") - r.Get("huge/"+v, run, "state-B") }})
		}
	}
	return append(ts, r.cliTargets()...)
}

// cliTargets are issue 23's targets on the logtool binary: stat's time
// independent of the session's size, replay near cat --json in time and
// at most 64 MB beyond its state, the whole-log commands in 64 MB.
func (r *Results) cliTargets() []target {
	sizes := r.Config.CLISizes
	if len(sizes) < 2 {
		return nil
	}
	small, big := sizes[0], sizes[len(sizes)-1]
	key := func(size int64, v string) string { return fmt.Sprintf("cli/%d/%s", size, v) }
	wall := func(size int64, v string) figure {
		return figure{Bytes(float64(size)) + " " + v, key(size, v), "ns/op", Duration}
	}
	rss := func(v string) figure { return figure{"peak RSS", key(big, v), "cli-maxrss-B", Bytes} }
	bigName := Bytes(r.Get(key(big, "replay raw"), 0, "jsonl-B"))
	if bigName == "—" {
		bigName = Bytes(float64(big))
	}
	var ts []target
	for _, v := range cliStatVariants() {
		t := r.ratioTarget(fmt.Sprintf("logtool %s: %s ÷ %s", v, Bytes(float64(big)), Bytes(float64(small))), false, 2, wall(big, v), wall(small, v))
		t.keys = []string{"huge/Stat"}
		ts = append(ts, t)
	}
	for _, enc := range []string{"raw", "zstd"} {
		rp, cat := "replay "+enc+", no checkpoint", "cat --json "+enc+", no checkpoint"
		t := r.ratioTarget(fmt.Sprintf("logtool replay ÷ cat --json, %s, %s", enc, bigName), false, 1.25, wall(big, rp), wall(big, cat))
		t.keys = []string{"huge/replay transcript/v1"}
		why := ""
		if enc == "zstd" {
			why = whyZstdRSS
		}
		ts = append(ts, t, target{name: fmt.Sprintf("logtool replay, %s, %s: peak RSS − the state it prints", enc, bigName), limit: 64e6, format: Bytes, why: why,
			parts: []figure{rss(rp), {"state (stdout)", key(big, rp), "stdout-B", Bytes}}, keys: []string{"huge/replay transcript/v1"},
			value: func(run int) float64 {
				return r.Get(key(big, rp), run, "cli-maxrss-B") - r.Get(key(big, rp), run, "stdout-B")
			}})
	}
	for _, v := range []string{"cat --json raw, no checkpoint", "cat --json zstd, no checkpoint", "show raw", "verify raw", "export raw"} {
		ts = append(ts, target{name: fmt.Sprintf("logtool %s, %s: peak RSS", v, bigName), limit: 64e6, format: Bytes,
			value: func(run int) float64 { return r.Get(key(big, v), run, "cli-maxrss-B") }})
	}
	return ts
}

// What bounds the targets that miss on this kind of machine (2 cores, an
// fsync of ~100 µs), from the profiles of the tasks behind them.
const (
	whyAppend     = "a write waits for the previous fsync (docs/format.md §9): a round is an fsync F plus x, the appenders' way back, so at most x/(x+F) of no fsync and 2F/(F+x) of an eager group commit"
	whyReplay     = "the folds run on a goroutine beside the read (replay/ahead.go): they cost 25–40 % of the read's CPU, and come off the wall time only while a second core is free"
	whyReplayJSON = "encoding/json's decode and apply use one core either way; the replay's folds gain only while a second core is free, so the ratio falls with the machine's load (met on an idle machine)"
	whyRedact     = "redaction's CPU (0.47 µs an event alone, BenchmarkRedactWorkload) lies in the round's x (above), so its share grows as the fsync shrinks"
	whyZstd       = "decompression costs ~0.8× the CPU of parsing the rows (`sequenceDecs_decodeSync` beside `scanString`): on one core zstd reads at ~0.55× raw; decoding ahead (eventlog/zstd.go) recovers only what the other core has free"
)

// whyAppendHere is whyAppend with the floor this run measured (floor.go):
// the ceiling no group commit that waits for the previous fsync passes on
// this machine.
func (r *Results) whyAppendHere() string {
	c := Summarize(r.Series("floor/64", "ceiling"))
	if c.N == 0 {
		return whyAppend
	}
	F, x := Summarize(r.Series("floor/64", "fsync-µs")), Summarize(r.Series("floor/64", "x-µs"))
	return fmt.Sprintf("%s; here 64 goroutines spinning %v each, no library, were back %.0f µs after a %.0f µs fsync: a ceiling of %s (RoundFloor)",
		whyAppend, floorWork, x.Median, F.Median, Ratio(c.Median))
}

// whyZstdRSS bounds a zstd replay's memory: the CLI scenario's zstd sessions
// are converted, and a rewrite's frames hold zstdframe.Target.
const whyZstdRSS = "a converted log's frames hold 4 MiB of rows: the frame being read, the one decoded ahead and an idle buffer for the next are 12 MiB, which the collector lets grow to twice that before it runs"

// withWhy returns t with the reason it misses, when it does.
func withWhy(t target, why string) target {
	t.why = why
	return t
}

// altStart is the index of the first alternative in appendVariants.
func altStart() int {
	for i, v := range appendVariants {
		if v.name == firstAltVariant {
			return i
		}
	}
	return len(appendVariants)
}

// Markdown renders the results: the run, the machine and its load, the
// targets (a missed one with the top of its profiles), then a table per
// scenario.
func (r *Results) Markdown(command string) string {
	var b strings.Builder
	r.head(&b, command)
	r.targetTable(&b, true)
	r.tables(&b)
	return b.String()
}

// Summary renders the run, the machine and its load and the targets, a
// missed one with the figures behind it and what bounds it, and points to
// tables, where the tables (Markdown) were written: what docs/performance.md
// holds.
func (r *Results) Summary(command, tables string) string {
	var b strings.Builder
	r.head(&b, command)
	r.targetTable(&b, false)
	fmt.Fprintf(&b, "Every table behind these figures, and the top of the CPU profiles of each missed target's tasks: `%s`.\n", tables)
	return b.String()
}

// head writes the command, the run and the machine with its load.
func (r *Results) head(b *strings.Builder, command string) {
	cfg := r.Config
	fmt.Fprintf(b, "Generated by `%s` (mode %s: %d interleaved runs) on %s, in %s.\n",
		command, cfg.Name, cfg.Runs, r.Start.Format("2006-01-02 15:04 UTC"), r.Wall.Round(time.Second))
	if cfg.Only != nil {
		fmt.Fprintf(b, "Only the measurements matching `%s` ran; the other cells are empty.\n", cfg.Only)
	}
	b.WriteString("Each cell is the median over the runs [min–max]; a ratio is taken within each run, then summarised the same way.\n\n")
	b.WriteString("| machine | |\n|---|---|\n")
	fmt.Fprintf(b, "| CPU | %s, %d cores |\n| kernel | %s |\n| file system measured | %s |\n| Go | %s |\n",
		orDash(r.Machine.CPU), r.Machine.Cores, orDash(r.Machine.Kernel), orDash(r.Machine.FS), r.Machine.Go)
	fmt.Fprintf(b, "| load average (1, 5, 15 min) before / after | %s / %s |\n", orDash(r.LoadBefore), orDash(r.LoadAfter))
	fmt.Fprintf(b, "| CPU time the harness and its children got | %s over %s of wall time (%.2f cores) |\n",
		r.CPU.Round(time.Millisecond), r.Wall.Round(time.Millisecond), r.CPU.Seconds()/r.Wall.Seconds())
	if r.BusyKnown {
		others := r.Busy - r.CPU
		fmt.Fprintf(b, "| CPU time the whole machine was busy (`/proc/stat`) | %s, of which others' (busy minus the harness's): %s (%.2f cores) |\n",
			r.Busy.Round(time.Millisecond), others.Round(time.Millisecond), others.Seconds()/r.Wall.Seconds())
	}
	b.WriteString("\n")
	if len(r.Errors) > 0 {
		b.WriteString("Measurements that failed (left out of the tables):\n\n")
		for _, e := range r.Errors {
			b.WriteString("- " + strings.ReplaceAll(e, "\n", " ") + "\n")
		}
		b.WriteString("\n")
	}
}

// targetTable writes the targets, met or missed, and the missed ones with
// the figures behind each, what bounds it and, with profiles, the top of
// its tasks' CPU profiles.
func (r *Results) targetTable(b *strings.Builder, profiles bool) {
	cfg := r.Config
	b.WriteString("### Targets (issues 13, 23 and 24)\n\n| target | measured | limit | |\n|---|---:|---:|---|\n")
	var missed []target
	for _, t := range r.targets() {
		runs := cfg.Runs
		if t.singleRun {
			runs = 1
		}
		vs := make([]float64, runs)
		for i := range vs {
			vs[i] = t.value(i)
		}
		s := Summarize(vs)
		op, met := "≤", s.Median <= t.limit
		if t.atLeast {
			op, met = "≥", s.Median >= t.limit
		}
		verdict := "missed"
		switch {
		case s.N == 0:
			verdict = "not measured"
		case met:
			verdict = "met"
		default:
			missed = append(missed, t)
		}
		fmt.Fprintf(b, "| %s | %s | %s %s | %s |\n", t.name, s.Format(t.format), op, t.format(t.limit), verdict)
	}
	b.WriteString("\n")
	r.missedSection(b, missed, profiles)
}

// tables writes a table per scenario.
func (r *Results) tables(b *strings.Builder) {
	cfg := r.Config
	b.WriteString("### Durable append\n\n")
	fmt.Fprintf(b, "Each appender appends the next workload event and waits until it is durable (sessionlog: `Append` + `Flush`), for %s per measurement. "+
		"events/fsync counts the fsync calls made (sessionlog, bare) or the commits made (the alternatives behind the harness's group commit: one write and one fsync each as their libraries make it); bbolt does not say. "+
		"The ratio column is events/s over sessionlog raw's in the same run.\n\n", cfg.AppendBudget)
	for _, n := range cfg.Appenders {
		fmt.Fprintf(b, "**%d appender(s)**\n\n", n)
		var rows []row
		for _, v := range appendVariants {
			rows = append(rows, row{v.name, fmt.Sprintf("append/%d/%s", n, v.name)})
		}
		r.table(b, rows, []column{
			{header: "events/s", metric: "events/s", format: Number},
			{header: "events/fsync", metric: "events/fsync", format: Number},
			{header: "p50", metric: "p50-ns", format: Duration},
			{header: "p99", metric: "p99-ns", format: Duration},
		}, []ratioColumn{{header: "events/s ÷ sessionlog raw", metric: "events/s", ref: fmt.Sprintf("append/%d/%s", n, rawVariant)}})
	}

	if slices.Contains(cfg.Appenders, 1) {
		b.WriteString("**1 appender, sessionlog raw and bare write+fdatasync alternating event by event** (one goroutine appends each event to both, which goes first alternating: the pair sees the same fsync latency however the machine's load moves; the ratio is of the p50s within each run)\n\n")
		fmt.Fprintf(b, "| | p50 | p99 |\n|---|---:|---:|\n| sessionlog raw | %s | %s |\n| bare write+fdatasync | %s | %s |\n| sessionlog ÷ bare (p50) | %s | |\n\n",
			Summarize(r.Series("paired/1", "p50-ns")).Format(Duration), Summarize(r.Series("paired/1", "p99-ns")).Format(Duration),
			Summarize(r.Series("paired/1", "bare-p50-ns")).Format(Duration), Summarize(r.Series("paired/1", "bare-p99-ns")).Format(Duration),
			Summarize(r.Series("paired/1", "p50-ratio")).Format(Ratio))
	}

	fmt.Fprintf(b, "### Read and replay\n\nThe %d-turn workload (seed 1), warm in the page cache. sessionlog reads through a read-only handle opened outside the timer; a replay is `replay.Replay` into a new projection. "+
		"The JSONL alternatives scan the same events as plain JSONL with `bufio.Scanner`, decode each line into `{seq,type,time,data json.RawMessage}` and, for \"+ apply\", pass it to the same projection's `Apply`. "+
		"MB/s counts the plain-JSONL bytes for every row (so it compares as events/s does); a cell is the median of %d passes; peak RSS is the child process's. The ratio column is events/s over sessionlog raw read's in the same run.\n\n", cfg.ReadTurns, cfg.ReadReps)
	var rows []row
	for _, v := range readVariants() {
		rows = append(rows, row{v, "read/" + v})
	}
	r.table(b, rows, []column{
		{header: "MB/s", metric: "MB/s", format: Number},
		{header: "events/s", metric: "events/s", format: Number},
		{header: "allocs/event", metric: "allocs/event", format: Number},
		{header: "peak RSS", metric: "maxrss-B", format: Bytes},
	}, []ratioColumn{{header: "÷ sessionlog raw read", metric: "events/s", ref: "read/sessionlog raw read"}})

	if len(cfg.OpsSizes) > 0 {
		r.opsSection(b)
	}
	if cfg.HugeBytes > 0 {
		r.hugeSection(b)
	}
	if len(cfg.CLISizes) > 0 {
		r.cliSection(b)
	}
	if len(cfg.SizeTurns) > 0 {
		r.sizesSection(b)
	}
}

// missedSection lists the missed targets, each with the figures it is made
// of and, when the run wrote CPU profiles (-profiles), the top of the
// profile of each task behind it: the reason is to be read there. A reason
// the previous reason repeats is printed as "as above".
func (r *Results) missedSection(b *strings.Builder, missed []target, profiles bool) {
	if len(missed) == 0 {
		return
	}
	if profiles {
		b.WriteString("Missed, with the figures behind each (medians), what bounds it, and the top of its tasks' CPU profiles (flat, of the last run):\n\n")
	} else {
		b.WriteString("Missed, with the figures behind each (medians) and what bounds it:\n\n")
	}
	lastWhy := ""
	for _, t := range missed {
		var parts []string
		for _, p := range t.parts {
			parts = append(parts, p.label+" "+Summarize(r.Series(p.key, p.metric)).Format(p.format))
		}
		fmt.Fprintf(b, "- %s", t.name)
		if len(parts) > 0 {
			fmt.Fprintf(b, ": %s", strings.Join(parts, "; "))
		}
		switch {
		case t.why == "":
		case t.why == lastWhy:
			b.WriteString(". Why: as above")
		default:
			fmt.Fprintf(b, ". Why: %s", t.why)
			lastWhy = t.why
		}
		b.WriteString("\n")
		if !profiles {
			continue
		}
		for _, k := range t.keys {
			if top := r.profileTop(k); top != "" {
				fmt.Fprintf(b, "  - profile of `%s`: %s\n", k, top)
			}
		}
	}
	b.WriteString("\n")
}

// profileTop returns the top functions by flat CPU time of task key's
// profile of the last run, "" when there is none.
func (r *Results) profileTop(key string) string {
	if r.Config.Profiles == "" || r.Exe == "" {
		return ""
	}
	file := filepath.Join(r.Config.Profiles, profileName(key))
	if _, err := os.Stat(file); err != nil {
		return ""
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=6", r.Exe, file).Output()
	if err != nil {
		return ""
	}
	return pprofTop(string(out))
}

// pprofTop turns the rows of `go tool pprof -top` into "fn flat%, …".
func pprofTop(out string) string {
	var fns []string
	rows := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && f[0] == "flat" && f[1] == "flat%":
			rows = true
		case rows && len(f) >= 6:
			fn := strings.Join(f[5:], " ")
			if i := strings.LastIndex(fn, "/"); i >= 0 {
				fn = fn[i+1:]
			}
			fns = append(fns, fmt.Sprintf("`%s` %s", fn, f[1]))
		}
	}
	return strings.Join(fns, ", ")
}

// cliSection writes the table of the logtool commands: each variant's time,
// CPU time and peak RSS at each size, and the ratio of the largest size's
// time to the smallest's.
func (r *Results) cliSection(b *strings.Builder) {
	sizes := r.Config.CLISizes
	names := make([]string, len(sizes))
	for i, s := range sizes {
		names[i] = Bytes(float64(s))
		if n := r.Get(fmt.Sprintf("cli/%d/replay raw", s), 0, "jsonl-B"); !math.IsNaN(n) {
			names[i] = Bytes(n)
		}
	}
	fmt.Fprintf(b, "### logtool on sessions of %s\n\n", strings.Join(names, " and "))
	b.WriteString("The `logtool` binary, built from this tree, run as a user runs it on sessions of a long-running agent of each size (workload seed 2, a Flush per turn, a `context/compacted` every 800 KiB, a checkpoint with the agent/v1 state after every eighth; \"no checkpoint\": seed 3, none), raw, and converted to zstd with its checked record then deleted (as a reader finds it after `logtool convert`). " +
		"\"writer open\": a write handle appended an event and holds the session while the command runs. Its stdout is read to the end through a pipe; `replay` prints the transcript/v1 state, `export` writes a file. " +
		"Time is the wall time to the process's exit (the median of several runs for stat and the small session, one run otherwise); peak RSS and CPU are the process's (`ProcessState.SysUsage`; ru_maxrss counts the launching Go process's own, about 10 MB, from before the exec). " +
		"The CLI processes write no CPU profile: the profiles of the library's tasks doing the same work stand in for them.\n\n")
	b.WriteString("| |")
	for _, n := range names {
		fmt.Fprintf(b, " %s: time | CPU | peak RSS |", n)
	}
	fmt.Fprintf(b, " time %s ÷ %s |\n|---|", names[len(names)-1], names[0])
	b.WriteString(strings.Repeat("---:|", 3*len(sizes)+1) + "\n")
	for _, v := range cliVariants {
		b.WriteString("| " + v + " |")
		for _, s := range sizes {
			k := fmt.Sprintf("cli/%d/%s", s, v)
			fmt.Fprintf(b, " %s | %s | %s |", Summarize(r.Series(k, "ns/op")).Format(Duration),
				Summarize(r.Series(k, "cli-cpu-ns")).Format(Duration), Summarize(r.Series(k, "cli-maxrss-B")).Format(Bytes))
		}
		big, small := fmt.Sprintf("cli/%d/%s", sizes[len(sizes)-1], v), fmt.Sprintf("cli/%d/%s", sizes[0], v)
		fmt.Fprintf(b, " %s |\n", Summarize(Ratios(r.Series(big, "ns/op"), r.Series(small, "ns/op"))).Format(Ratio))
	}
	b.WriteString("\n")
}

// opsSection writes the Stat, open, checkpoint and fork table.
func (r *Results) opsSection(b *strings.Builder) {
	cfg := r.Config
	b.WriteString("### Stat, open, checkpoint, fork\n\n")
	fmt.Fprintf(b, "Closed sessions of the workload repeated to the plain-JSONL size shown, a Flush per turn, each closed after a checkpoint (so its digest state is saved). A cell is the median of %d ops. "+
		"\"writer open\": a write handle is held while Stat runs; \"first checkpoint after reopening\": the handle is opened (not timed) and the first `checkpoint.Create` timed; \"fork\": `Fork` at the last event + `Close`; \"copy + fsync\": the parent's file copied, fsynced with its folder.\n\n", cfg.OpsReps)
	var orows []row
	for _, v := range opsVariants {
		orows = append(orows, row{v, v})
	}
	r.opsTable(b, orows)
}

// hugeSection writes the table of the huge session.
func (r *Results) hugeSection(b *strings.Builder) {
	cfg := r.Config
	fmt.Fprintf(b, "### A %s session\n\n", Bytes(float64(cfg.HugeBytes)))
	fmt.Fprintf(b, "One raw session of %s of plain JSONL (%s measured; workload seed 2, a Flush per turn, a `context/compacted` event every 800 KiB — about what a 200k-token context window holds: a session this long only exists with compactions —, a checkpoint with the agent/v1 state after every eighth), closed by its writer. "+
		"Each operation runs in its own process, whose peak RSS (VmHWM) is shown. Stat and \"Open for writing\" are the median of %d; "+
		"\"full check\" opens after the session's checked record was deleted (as after a crash: the whole log is read); a replay opens a read-only handle and runs `replay.Replay` into a new projection (what `logtool replay` does); verify is `checkpoint.Verify` with both built-in projections known (what `logtool verify` does). "+
		"\"projection's state\" is the live heap after the operation and a GC, less the live heap before it.\n\n",
		Bytes(float64(cfg.HugeBytes)), Bytes(r.Get("huge/replay agent/v1", 0, "jsonl-B")), cfg.HugeReps)
	var rows []row
	for _, v := range hugeVariants {
		rows = append(rows, row{v, "huge/" + v})
	}
	for _, rw := range rows {
		rss, state := r.Series(rw.key, "maxrss-B"), r.Series(rw.key, "state-B")
		diff := make([]float64, len(rss))
		for i := range rss {
			diff[i] = rss[i] - state[i]
		}
		r.ByKey[rw.key] = withMetric(r.ByKey[rw.key], "rss-less-state-B", diff)
	}
	r.table(b, rows, []column{
		{header: "time", metric: "ns/op", format: Duration},
		{header: "MB/s", metric: "MB/s", format: Number},
		{header: "events/s", metric: "events/s", format: Number},
		{header: "peak RSS", metric: "maxrss-B", format: Bytes},
		{header: "projection's state", metric: "state-B", format: Bytes},
		{header: "peak RSS − state", metric: "rss-less-state-B", format: Bytes},
	}, nil)
}

// withMetric returns ms with metric set to vs[i] in run i (runs that were
// not measured stay nil).
func withMetric(ms []Metrics, metric string, vs []float64) []Metrics {
	for i := range ms {
		if ms[i] != nil && i < len(vs) {
			ms[i][metric] = vs[i]
		}
	}
	return ms
}

// sizesSection writes the bytes-on-disk table.
func (r *Results) sizesSection(b *strings.Builder) {
	cfg := r.Config
	b.WriteString("### Bytes on disk\n\nThe first turns of the workload (seed 1), written without fsync (sizes do not depend on it). Measured once: the sizes are the same in every run.")
	fmt.Fprintf(b, " `zstd -N` is %s. The snapshot rows are what a framework that rewrites its whole transcript (the transcript/v1 state as JSON) after every turn keeps and writes.\n\n", r.zstdTool())
	b.WriteString("| |")
	for _, turns := range cfg.SizeTurns {
		fmt.Fprintf(b, " %d turns | ÷ JSONL |", turns)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|---:|", len(cfg.SizeTurns)) + "\n")
	for _, sr := range sizeRows {
		b.WriteString("| " + sr.label + " |")
		for _, turns := range cfg.SizeTurns {
			k := fmt.Sprintf("sizes/%d", turns)
			v := r.Get(k, 0, sr.metric)
			fmt.Fprintf(b, " %s | %s |", Bytes(v), Ratio(v/r.Get(k, 0, "jsonl-B")))
		}
		b.WriteString("\n")
	}
}

// opsTable writes the ops table: a row per variant, a column per size,
// and the per-run ratio of the largest size to the smallest.
func (r *Results) opsTable(b *strings.Builder, rows []row) {
	sizes := r.Config.OpsSizes
	b.WriteString("| |")
	for _, s := range sizes {
		b.WriteString(" " + Bytes(float64(s)) + " |")
	}
	if len(sizes) > 1 {
		fmt.Fprintf(b, " %s ÷ %s |", Bytes(float64(sizes[len(sizes)-1])), Bytes(float64(sizes[0])))
	}
	n := len(sizes)
	if n > 1 {
		n++
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", n) + "\n")
	for _, rw := range rows {
		b.WriteString("| " + rw.label + " |")
		for _, s := range sizes {
			b.WriteString(" " + Summarize(r.Series(fmt.Sprintf("ops/%d/%s", s, rw.key), "ns/op")).Format(Duration) + " |")
		}
		if len(sizes) > 1 {
			big := r.Series(fmt.Sprintf("ops/%d/%s", sizes[len(sizes)-1], rw.key), "ns/op")
			small := r.Series(fmt.Sprintf("ops/%d/%s", sizes[0], rw.key), "ns/op")
			b.WriteString(" " + Summarize(Ratios(big, small)).Format(Ratio) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// zstdTool says what compressed the `zstd -N` rows.
func (r *Results) zstdTool() string {
	for _, turns := range r.Config.SizeTurns {
		switch r.Get(fmt.Sprintf("sizes/%d", turns), 0, "zstd-cli") {
		case 1:
			return "the `zstd` command"
		case 0:
			return "klauspost/compress's encoder at `EncoderLevelFromZstd(N)` (no `zstd` command was found)"
		}
	}
	return "—"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
