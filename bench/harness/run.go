package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionlog/sessionlog/bench/workload"
)

// Metrics are the figures of one measurement, by name.
type Metrics map[string]float64

// Config chooses what a Run measures. Sizes and counts of zero are not
// defaults: use Quick, Standard or Long.
type Config struct {
	Name         string        // the mode's name, shown in the report
	Runs         int           // interleaved runs of every variant
	Appenders    []int         // concurrent appenders of the append scenario
	AppendBudget time.Duration // how long one append measurement runs
	ReadTurns    int           // turns of the read workload
	ReadReps     int           // passes per read measurement (the median is kept)
	OpsSizes     []int64       // plain-JSONL bytes of the ops scenario's sessions
	OpsReps      int           // ops per ops measurement (the median is kept)
	SizeTurns    []int         // turns of the bytes-on-disk scenario
	// SnapshotEveryTurn bounds, in turns, the sessions whose full snapshot
	// per turn is marshalled every turn (longer ones marshal the last only).
	SnapshotEveryTurn int
	// HugeBytes is the plain-JSONL size of the huge scenario's session
	// (0: no huge scenario); HugeReps the ops per quick huge measurement.
	HugeBytes int64
	HugeReps  int
	// CLISizes are the plain-JSONL bytes of the CLI scenario's sessions,
	// smallest first (none: no CLI scenario); Logtool is the logtool binary
	// it runs ("": built from the library's module at the start of Run).
	CLISizes []int64
	Logtool  string
	Work     string // folder for fixtures and measurements (a temp folder is made in it)
	// Profiles, when set, is a folder where every child of the last run
	// writes a CPU profile, named after its task (go tool pprof -top).
	Profiles string
	// Only, when set, keeps the measurements whose task key it matches
	// ("append/64/sessionlog raw", "read/encoding/json decode", "ops/1048576/Stat raw", "sizes/200").
	Only     *regexp.Regexp
	Progress io.Writer // a line per measurement; nil for none
}

// Quick is the CI-sized mode: one run of every variant on small sizes.
func Quick() Config {
	return Config{
		Name: "quick", Runs: 1, Appenders: []int{1, 8}, AppendBudget: 30 * time.Millisecond,
		ReadTurns: 10, ReadReps: 1, OpsSizes: []int64{100 << 10}, OpsReps: 2,
		SizeTurns: []int{10}, SnapshotEveryTurn: 10, HugeBytes: 2 << 20, HugeReps: 2,
		CLISizes: []int64{100 << 10, 1 << 20},
	}
}

// Standard is the mode whose tables docs/performance.md shows: five runs,
// the 200-turn workload, 1 MB sessions for the ops, and 200 and 2,000
// turns for the sizes.
func Standard() Config {
	return Config{
		Name: "standard", Runs: 5, Appenders: []int{1, 8, 64, 256}, AppendBudget: time.Second,
		ReadTurns: 200, ReadReps: 3, OpsSizes: []int64{1 << 20}, OpsReps: 20,
		SizeTurns: []int{200, 2000}, SnapshotEveryTurn: 200,
		CLISizes: []int64{1 << 20, 32 << 20},
	}
}

// Long is Standard with the 100 MB sessions for the ops, the 2,000-turn
// read workload and the 1 GiB session of the huge scenario.
func Long() Config {
	c := Standard()
	c.Name, c.ReadTurns, c.OpsSizes = "long", 2000, []int64{1 << 20, 100 << 20}
	c.HugeBytes, c.HugeReps = 1<<30, 5
	c.CLISizes = []int64{1 << 20, 1 << 30}
	return c
}

// task is one measurement, as the parent hands it to a child process.
type task struct {
	Kind      string // "append", "paired", "floor", "read", "ops", "sizes", "huge", "cli"
	Variant   string
	Fixtures  string
	Work      string
	Appenders int
	Budget    time.Duration
	Reps      int
	Size      int64
	Turns     int
	Every     bool
	Profile   string // a file for the child's CPU profile, or ""
	Logtool   string // the logtool binary (CLI tasks)
}

// key names the task's row in the results.
func (t task) key() string {
	switch t.Kind {
	case "append":
		return fmt.Sprintf("append/%d/%s", t.Appenders, t.Variant)
	case "ops":
		return fmt.Sprintf("ops/%d/%s", t.Size, t.Variant)
	case "sizes":
		return fmt.Sprintf("sizes/%d", t.Turns)
	case "huge":
		return "huge/" + t.Variant
	case "cli":
		return fmt.Sprintf("cli/%d/%s", t.Size, t.Variant)
	case "paired":
		return "paired/1"
	case "floor":
		return fmt.Sprintf("floor/%d", t.Appenders)
	}
	return t.Kind + "/" + t.Variant
}

// Child runs the task the parent encoded in arg and writes its metrics to
// w as JSON. cmd/harness calls it when started with -child.
func Child(ctx context.Context, arg string, w io.Writer) error {
	var t task
	if err := json.Unmarshal([]byte(arg), &t); err != nil {
		return fmt.Errorf("harness: bad task: %w", err)
	}
	if t.Profile != "" {
		f, err := os.Create(t.Profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	m, err := t.run(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", t.key(), err)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if hwm, ok := vmHWM(b); ok {
			m["maxrss-B"] = float64(hwm)
		}
	}
	return json.NewEncoder(w).Encode(m)
}

func (t task) run(ctx context.Context) (Metrics, error) {
	switch t.Kind {
	case "append":
		evs := workload.Generate(workload.Config{Seed: 1, Turns: 20})
		return runAppend(ctx, t.Variant, t.Work, t.Appenders, t.Budget, evs)
	case "paired":
		evs := workload.Generate(workload.Config{Seed: 1, Turns: 20})
		return runPaired(ctx, t.Work, t.Budget, evs)
	case "floor":
		return floorMetrics(ctx, t.Work, t.Appenders, t.Budget)
	case "read":
		return runRead(ctx, t.Variant, t.Fixtures, t.Reps)
	case "ops":
		return runOps(ctx, t.Variant, t.Fixtures, t.Size, t.Reps)
	case "sizes":
		return runSizes(ctx, t.Work, t.Turns, t.Every)
	case "huge":
		return runHuge(ctx, t.Variant, t.Fixtures, t.Reps)
	case "cli":
		return runCLI(ctx, t.Logtool, t.Variant, t.Fixtures, t.Work, t.Size, t.Reps)
	}
	return nil, fmt.Errorf("harness: no task kind %q", t.Kind)
}

// Results are what a Run measured: by task key, one Metrics per run (nil
// where the run failed), plus the machine and its load.
type Results struct {
	Config  Config
	Machine Machine
	Start   time.Time
	Wall    time.Duration
	// LoadBefore and LoadAfter are /proc/loadavg's three figures.
	LoadBefore, LoadAfter string
	// CPU is the CPU time (user + system) the harness and its children
	// got; Busy the CPU time the whole machine spent over the same wall
	// time (from /proc/stat), when BusyKnown.
	CPU, Busy time.Duration
	BusyKnown bool
	ByKey     map[string][]Metrics
	Errors    []string
	// Exe is the harness binary the children ran (their profiles' binary).
	Exe string
}

// Get returns metric of key in run r, NaN when it was not measured.
func (r *Results) Get(key string, run int, metric string) float64 {
	ms := r.ByKey[key]
	if run >= len(ms) || ms[run] == nil {
		return math.NaN()
	}
	v, ok := ms[run][metric]
	if !ok {
		return math.NaN()
	}
	return v
}

// Series returns metric of key in every run.
func (r *Results) Series(key, metric string) []float64 {
	out := make([]float64, r.Config.Runs)
	for i := range out {
		out[i] = r.Get(key, i, metric)
	}
	return out
}

// Run prepares the fixtures and runs every variant of every scenario
// cfg.Runs times, interleaved, each in a child process started as
// exe -child <task>. A measurement that fails is recorded in
// Results.Errors and left out; Run fails only when the fixtures cannot be
// made or ctx is done (a partial run reports nothing).
func Run(ctx context.Context, cfg Config, exe string) (*Results, error) {
	if cfg.Profiles != "" {
		// A folder the user names is made, as `go test -cpuprofile` makes its file.
		if err := os.MkdirAll(cfg.Profiles, 0o755); err != nil {
			return nil, fmt.Errorf("harness: profiles: %w", err)
		}
	}
	root, err := os.MkdirTemp(cfg.Work, "harness-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	res := &Results{Config: cfg, Machine: ReadMachine(root), Start: time.Now().UTC(), ByKey: map[string][]Metrics{}, LoadBefore: LoadAvg(), Exe: exe}
	busy0, busyOK0 := machineBusy()
	self0 := selfCPU()
	start := time.Now()
	logf := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	fixtures := root + "/fixtures"
	if err := os.Mkdir(fixtures, 0o700); err != nil {
		return nil, err
	}
	logf("preparing fixtures in %s", fixtures)
	if err := prepare(ctx, fixtures, cfg.ReadTurns, cfg.OpsSizes); err != nil {
		return nil, fmt.Errorf("harness: fixtures: %w", err)
	}
	if cfg.HugeBytes > 0 && slices.ContainsFunc(hugeVariants, func(v string) bool { return cfg.Only == nil || cfg.Only.MatchString("huge/"+v) }) {
		logf("writing the huge session (%s of JSONL)", Bytes(float64(cfg.HugeBytes)))
		if err := prepareHuge(ctx, fixtures, cfg.HugeBytes); err != nil {
			return nil, fmt.Errorf("harness: huge fixture: %w", err)
		}
	}
	cliWanted := func(size int64) bool {
		return slices.ContainsFunc(cliVariants, func(v string) bool {
			return cfg.Only == nil || cfg.Only.MatchString(task{Kind: "cli", Variant: v, Size: size}.key())
		})
	}
	logtool := cfg.Logtool
	if len(cfg.CLISizes) > 0 && slices.ContainsFunc(cfg.CLISizes, cliWanted) {
		if logtool == "" {
			logf("building logtool")
			if logtool, err = BuildLogtool(ctx, root); err != nil {
				return nil, err
			}
		}
		logf("writing the CLI scenario's sessions")
		if err := prepareCLI(ctx, fixtures, cfg.CLISizes); err != nil {
			return nil, fmt.Errorf("harness: CLI fixtures: %w", err)
		}
	}
	do := func(run int, t task) {
		if ctx.Err() != nil || cfg.Only != nil && !cfg.Only.MatchString(t.key()) {
			return
		}
		t.Fixtures = fixtures
		if cfg.Profiles != "" && run == cfg.Runs-1 && t.Kind != "cli" { // a CLI task's work is logtool's, not the child's
			t.Profile = filepath.Join(cfg.Profiles, profileName(t.key()))
		}
		work, err := os.MkdirTemp(root, "m-")
		if err == nil {
			t.Work = work
			var m Metrics
			m, err = child(ctx, exe, t)
			if err == nil {
				logf("run %d %-60s %v", run+1, t.key(), brief(m))
				ms := res.ByKey[t.key()]
				for len(ms) <= run {
					ms = append(ms, nil)
				}
				ms[run] = m
				res.ByKey[t.key()] = ms
			}
			os.RemoveAll(work)
		}
		if err != nil {
			logf("run %d %s: %v", run+1, t.key(), err)
			res.Errors = append(res.Errors, fmt.Sprintf("run %d, %s: %v", run+1, t.key(), err))
		}
	}
	// Sizes do not vary from run to run: measured once.
	for _, turns := range cfg.SizeTurns {
		do(0, task{Kind: "sizes", Turns: turns, Every: turns <= cfg.SnapshotEveryTurn})
	}
	for run := range cfg.Runs {
		for _, n := range cfg.Appenders {
			for _, v := range appendVariants {
				do(run, task{Kind: "append", Variant: v.name, Appenders: n, Budget: cfg.AppendBudget})
			}
		}
		if slices.Contains(cfg.Appenders, 64) {
			do(run, task{Kind: "floor", Appenders: 64, Budget: cfg.AppendBudget})
		}
		if slices.Contains(cfg.Appenders, 1) {
			do(run, task{Kind: "paired", Budget: cfg.AppendBudget})
		}
		for _, v := range readVariants() {
			do(run, task{Kind: "read", Variant: v, Reps: cfg.ReadReps})
		}
		for _, size := range cfg.OpsSizes {
			for _, v := range opsVariants {
				do(run, task{Kind: "ops", Variant: v, Size: size, Reps: cfg.OpsReps})
			}
		}
		if cfg.HugeBytes > 0 {
			for _, v := range hugeVariants {
				do(run, task{Kind: "huge", Variant: v, Reps: cfg.HugeReps})
			}
		}
		for _, size := range cfg.CLISizes {
			for _, v := range cliVariants {
				do(run, task{Kind: "cli", Variant: v, Size: size, Reps: cliReps(v, size, max(cfg.HugeReps, 3)), Logtool: logtool})
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("harness: stopped: %w", err) // no report from a partial run
	}
	res.Wall = time.Since(start)
	res.LoadAfter = LoadAvg()
	res.CPU = selfCPU() - self0
	if busy1, ok := machineBusy(); ok && busyOK0 {
		res.Busy, res.BusyKnown = busy1-busy0, true
	}
	return res, nil
}

// child runs t in a child process and returns its metrics, with its CPU
// time ("cpu-ns") added. The child reports its own peak RSS ("maxrss-B",
// VmHWM): the rusage of a child started by os/exec (vfork, then exec)
// carries the parent's high-water mark from before the exec.
func child(ctx context.Context, exe string, t task) (Metrics, error) {
	arg, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child", string(arg))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	var m Metrics
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("child output %q: %w", out.Bytes(), err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m["cpu-ns"] = float64(time.Duration(ru.Utime.Nano() + ru.Stime.Nano()))
	}
	return m, nil
}

// vmHWM returns the peak resident set size, in bytes, of a
// /proc/self/status ("VmHWM:   123456 kB").
func vmHWM(status []byte) (int64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, false
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			return n << 10, err == nil
		}
	}
	return 0, false
}

// profileName makes a file name of a task key: "append/64/sessionlog raw"
// → "append-64-sessionlog_raw.pprof".
func profileName(key string) string {
	r := strings.NewReplacer("/", "-", " ", "_", ",", "", "+", "plus", "=", "")
	return r.Replace(key) + ".pprof"
}

// brief is a progress line's summary of m.
func brief(m Metrics) string {
	for _, k := range []string{"events/s", "ns/op", "jsonl-B", "p50-ratio"} {
		if v, ok := m[k]; ok {
			return fmt.Sprintf("%s=%s", k, Number(v))
		}
	}
	return ""
}

// selfCPU returns the CPU time of this process and its waited-for
// children.
func selfCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
