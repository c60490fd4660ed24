package replaytest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/projection"
	"github.com/sessionlog/sessionlog/replay"
	"github.com/sessionlog/sessionlog/replay/replaytest/golden"
)

// Factory returns fresh projections (in their empty state), for one
// fixture.
type Factory func() []projection.Projection

// Builtins returns fresh instances of the built-in projections: agent and
// transcript. It is the Factory Dir uses when given nil.
func Builtins() []projection.Projection {
	return []projection.Projection{projection.NewAgent(), projection.NewTranscript()}
}

// Golden replays the session file fixture into ps (Builtins when none is
// given) and compares each projection's state with its golden file,
// golden.FileName(fixture, p). A mismatch, a missing golden or a fixture
// that cannot be replayed fails t; under -update (or SESSIONLOG_UPDATE_GOLDEN=1)
// goldens that differ or are missing are written instead.
//
// The projections must be fresh: Golden resets them, but they are left
// holding the fixture's state.
func Golden(t testing.TB, fixture string, ps ...projection.Projection) {
	t.Helper()
	if len(ps) == 0 {
		ps = Builtins()
	}
	if err := distinct(ps); err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	update := Updating()
	outs, err := check(t.Context(), fixture, ps, update)
	if err != nil {
		t.Fatalf("replaytest: fixture %s: %v", fixture, err)
	}
	hint := regenerate(t.Name())
	for _, o := range outs {
		switch o.status {
		case statusMissing:
			t.Errorf("replaytest: fixture %s: no golden file %s for %s\n\tcreate it: %s\n\tthen review it and commit it",
				fixture, o.golden, o.id, hint)
		case statusMismatch:
			t.Errorf("replaytest: fixture %s: the %s state differs from %s\n\t%s\n\tif the change is intended, regenerate: %s",
				fixture, o.id, o.golden, o.mismatch, hint)
		case statusCreated, statusUpdated:
			t.Logf("replaytest: %s %s", o.status, o.golden)
		}
	}
}

// Dir runs Golden on every fixture in dir (*.jsonl and *.jsonl.zst, in name
// order) as a subtest named after the file, with projections from
// newProjections, called once per fixture (Builtins when nil), and once more
// to learn the projections' names and versions. It fails
// when dir holds no fixture, and reports stale goldens: those of a fixture
// that is gone, and those of another version of a projection it runs
// (agent-v1 when agent/v2 is run). Under -update it deletes them.
func Dir(t *testing.T, dir string, newProjections Factory) {
	t.Helper()
	if newProjections == nil {
		newProjections = Builtins
	}
	fixtures, err := Fixtures(dir)
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	if len(fixtures) == 0 {
		t.Fatalf("replaytest: no fixtures (*.jsonl, *.jsonl.zst) in %s", dir)
	}
	for _, f := range fixtures {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Helper()
			Golden(t, f, newProjections()...)
		})
	}
	stale, err := staleGoldens(dir, newProjections())
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	for _, s := range stale {
		if Updating() {
			if err := os.Remove(s.path); err != nil {
				t.Errorf("replaytest: %v", err)
				continue
			}
			t.Logf("replaytest: deleted stale golden %s (%s)", s.path, s.why)
			continue
		}
		t.Errorf("replaytest: stale golden %s: %s\n\tdelete it, or run: %s", s.path, s.why, regenerate(t.Name()))
	}
}

// Fixtures lists the session files in dir (*.jsonl, *.jsonl.zst), sorted
// by name.
func Fixtures(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && isFixture(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

func isFixture(name string) bool {
	return strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst")
}

// distinct refuses two projections with one ID: they would share a golden.
func distinct(ps []projection.Projection) error {
	seen := map[string]bool{}
	for _, p := range ps {
		id := projection.ID(p)
		if seen[id] {
			return fmt.Errorf("projection %s given twice", id)
		}
		seen[id] = true
	}
	return nil
}

// status is what became of one golden.
type status string

const (
	statusMatch    status = "matches"
	statusMismatch status = "differs"
	statusMissing  status = "missing"
	statusCreated  status = "created"
	statusUpdated  status = "updated"
)

// outcome is the comparison of one projection's state with its golden.
type outcome struct {
	id       string // the projection's ID
	golden   string // the golden file
	status   status
	mismatch *golden.Mismatch
}

// check replays fixture into ps and compares (or, with update, writes) each
// golden. An error means the fixture could not be replayed.
func check(ctx context.Context, fixture string, ps []projection.Projection, update bool) ([]outcome, error) {
	src, err := file.New(afero.NewOsFs(), filepath.Dir(fixture)).OpenPath(ctx, fixture)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	// The log digests first, without the projections: a damaged or
	// hand-edited fixture is reported as such, and a projection whose
	// behaviour changed still gets its readable diff below.
	if _, err := replay.Replay(ctx, src, nil, replay.CheckDigests()); err != nil {
		if errors.Is(err, replay.ErrDigest) {
			return nil, fmt.Errorf("checking log digests: the fixture was edited or damaged since it was written (re-export or regenerate it): %w", err)
		}
		return nil, fmt.Errorf("checking log digests: %w", err)
	}
	if _, err := replay.Replay(ctx, src, ps); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	outs := make([]outcome, 0, len(ps))
	for _, p := range ps {
		o, err := compareGolden(fixture, p, update)
		if err != nil {
			return nil, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// compareGolden compares p's state with its golden beside fixture, or
// with update writes it (golden.Check, as logtool replay --golden does).
func compareGolden(fixture string, p projection.Projection, update bool) (outcome, error) {
	o := outcome{id: projection.ID(p), golden: golden.FileName(fixture, p)}
	res, err := golden.Check(o.golden, p, update)
	if err != nil {
		return o, err
	}
	o.mismatch = res.Mismatch
	switch res.Status {
	case golden.Missing:
		o.status = statusMissing
	case golden.Differs:
		o.status = statusMismatch
	case golden.Created:
		o.status = statusCreated
	case golden.Updated:
		o.status = statusUpdated
	default: // Match, Unchanged
		o.status = statusMatch
	}
	return o, nil
}

// regenerate is the command that rewrites the goldens of test name.
func regenerate(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return fmt.Sprintf("go test -run '^%s$' -update (or %s=1 go test ...)", strings.Join(parts, "$/^"), EnvUpdate)
}

// stale is a golden file no fixture or projection of dir produces.
type stale struct{ path, why string }

// goldenName matches the end of a golden's name after its fixture:
// .<name>-v<version>.golden.json.
var goldenName = regexp.MustCompile(`^(.+)\.([^./]+)-v([0-9]+)` + regexp.QuoteMeta(golden.Suffix) + `$`)

// staleGoldens lists the goldens in dir of a fixture that is gone, or of a
// version of one of ps other than the one ps hold. Goldens of projections
// ps does not hold are left alone: another test may run them.
func staleGoldens(dir string, ps []projection.Projection) ([]stale, error) {
	versions := map[string]int{}
	for _, p := range ps {
		versions[p.Name()] = p.Version()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []stale
	for _, e := range entries {
		m := goldenName.FindStringSubmatch(e.Name())
		if m == nil || !isFixture(m[1]) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fixture, name := m[1], m[2]
		version, _ := strconv.Atoi(m[3])
		if _, err := os.Stat(filepath.Join(dir, fixture)); errors.Is(err, fs.ErrNotExist) {
			out = append(out, stale{path, "its fixture " + fixture + " is gone"})
			continue
		}
		if v, ok := versions[name]; ok && v != version {
			out = append(out, stale{path, fmt.Sprintf("%s is at version %d now", name, v)})
		}
	}
	slices.SortFunc(out, func(a, b stale) int { return strings.Compare(a.path, b.path) })
	return out, nil
}
