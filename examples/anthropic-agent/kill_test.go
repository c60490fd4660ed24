package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	adapter "github.com/sessionlog/sessionlog/adapters/anthropic"
	"github.com/sessionlog/sessionlog/adapters/anthropic/anthropictest"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
	"github.com/sessionlog/sessionlog/provider"
)

const akia = "AKIAIOSFODNN7EXAMPLE"

// The two fifos a tool blocks on until the test writes them, so that a
// kill can land while a tool runs: read_file reads "gate", run_command
// runs "cat gate2".
const (
	gateText  = "the gate opened"
	gate2Text = "the second gate opened"
)

var labelArgs = []string{"--label", "agent=test", "--label", "task=kill"}

var turns = []string{"look at the files", "write a file"}

// plan: turn 0 reads the secret and the gate, then runs a command that
// blocks on gate2, then answers; turn 1 writes a file, then answers.
func plan(turn, step int) []anthropictest.Call {
	switch {
	case turn == 0 && step == 0:
		return []anthropictest.Call{{Name: "read_file", Input: map[string]string{"path": "secret.txt"}}, {Name: "read_file", Input: map[string]string{"path": "gate"}}}
	case turn == 0 && step == 1:
		return []anthropictest.Call{{Name: "run_command", Input: map[string]string{"command": "cat gate2"}}}
	case turn == 1 && step == 0:
		return []anthropictest.Call{{Name: "run_command", Input: map[string]string{"command": "echo done > out.txt && echo written"}}}
	}
	return nil
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the example once for every test of the package.
func binary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "anthropic-agent-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "anthropic-agent")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// killPoint is where a run is killed: a fake's Point, or a gate opened
// by a running tool.
type killPoint struct {
	point anthropictest.Point
	gate  string
}

func (k killPoint) String() string {
	if k.gate != "" {
		return "tool-on-" + k.gate
	}
	return fmt.Sprintf("%s-%d", k.point.Kind, k.point.N)
}

// world is one scenario's folders, fake and gates.
type world struct {
	t          *testing.T
	root       string
	dir, work  string
	fake       *anthropictest.Server
	stream     bool
	mu         sync.Mutex
	kill       *killPoint
	proc       *exec.Cmd
	exited     chan struct{}
	killedOnce bool
}

func newWorld(t *testing.T, stream bool) *world {
	root := t.TempDir()
	w := &world{t: t, root: root, dir: filepath.Join(root, "sessions"), work: filepath.Join(root, "work"), stream: stream}
	require.NoError(t, os.MkdirAll(w.work, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(w.work, "secret.txt"), []byte("aws_access_key_id = "+akia+"\n"), 0o600))
	w.fake = anthropictest.New(plan, anthropictest.WithQuote("read_file"),
		anthropictest.WithHook(func(p anthropictest.Point) { w.at(killPoint{point: p}) }))
	t.Cleanup(w.fake.Close)
	for _, g := range gates {
		require.NoError(t, syscall.Mkfifo(filepath.Join(w.work, g.name), 0o600))
	}
	return w
}

var gates = []struct{ name, text string }{{"gate", gateText}, {"gate2", gate2Text}}

// openGates feeds each fifo once, during one run: opening it for writing
// blocks until a tool opens it, so the kill lands while the tool runs.
// The returned func stops the feeders that were not read.
func (w *world) openGates() (stop func()) {
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	for _, g := range gates {
		path := filepath.Join(w.work, g.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			select {
			case <-stopped:
				return
			default:
			}
			w.at(killPoint{gate: g.name})
			_, _ = f.WriteString(g.text) // fails when the reader was killed
		}()
	}
	return func() {
		close(stopped)
		for _, g := range gates {
			// Open each fifo for reading, so that a feeder still blocked
			// in its open returns and sees the stop.
			if f, err := os.OpenFile(filepath.Join(w.work, g.name), os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				defer f.Close()
			}
		}
		wg.Wait()
	}
}

// at kills the running process, when p is the kill point, and returns
// once it is dead.
func (w *world) at(p killPoint) {
	w.mu.Lock()
	hit := w.kill != nil && *w.kill == p && !w.killedOnce && w.proc != nil
	if hit {
		w.killedOnce = true
	}
	proc, exited := w.proc, w.exited
	w.mu.Unlock()
	if hit {
		_ = proc.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// run runs the example once; it returns whether it was killed.
func (w *world) run(kill *killPoint) (killed bool) {
	args := append([]string{"--dir", w.dir, "--work", w.work}, labelArgs...)
	if w.stream {
		args = append(args, "--stream")
	}
	args = append(args, turns...)
	cmd := exec.Command(binary(w.t), args...)
	env := []string{}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == provider.IdentityEnv || strings.HasPrefix(k, "ANTHROPIC_") || k == "HOME" || k == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "ANTHROPIC_BASE_URL="+w.fake.URL, "ANTHROPIC_API_KEY=sk-ant-test-key",
		"HOME="+filepath.Join(w.root, "home"), "XDG_CONFIG_HOME="+filepath.Join(w.root, "config"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	stop := w.openGates()
	// Start under the lock, so that a kill point the process reaches at
	// once waits for its Process.
	w.mu.Lock()
	w.kill, w.killedOnce, w.proc, w.exited = kill, false, cmd, make(chan struct{})
	serr := cmd.Start()
	w.mu.Unlock()
	require.NoError(w.t, serr)
	err := cmd.Wait()
	close(w.exited)
	stop()
	w.mu.Lock()
	killed, w.proc, w.kill = w.killedOnce, nil, nil
	w.mu.Unlock()
	if killed {
		var ee *exec.ExitError
		require.True(w.t, errors.As(err, &ee), "killed run: %v\n%s", err, out.String())
		return true
	}
	require.NoError(w.t, err, "run:\n%s", out.String())
	return false
}

func bodies(rs []anthropictest.Received) []string {
	var b []string
	for _, r := range rs {
		b = append(b, r.Body)
	}
	return b
}

// outcomeUnknown returns the request bodies with the result of the call
// id replaced by the outcome-unknown result a resumed loop gives a write
// call that started and has no result.
func outcomeUnknown(t *testing.T, bodies []string, id string) []string {
	b, err := json.Marshal(sdk.NewToolResultBlock(id, adapter.OutcomeUnknown, true))
	require.NoError(t, err)
	var unknown any
	require.NoError(t, json.Unmarshal(b, &unknown))
	var out []string
	for _, body := range bodies {
		var req map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &req))
		for _, m := range req["messages"].([]any) {
			content, _ := m.(map[string]any)["content"].([]any)
			for i, c := range content {
				if blk := c.(map[string]any); blk["type"] == "tool_result" && blk["tool_use_id"] == id {
					content[i] = unknown
				}
			}
		}
		b, err := json.Marshal(req)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// TestKillAtEveryPointResumesWithTheSameRequests runs the example against
// the fake without a crash, then, for every kill point (each request
// received, each stream half sent, each response sent, each blocking
// tool running), kills it there with SIGKILL and starts it again with the
// same labels: the restarted run must finish, and send exactly the
// requests the uncrashed run sent from where it resumed (but for a
// run_command killed while it ran, which gets the outcome-unknown
// result); the AKIA key must be in clear in no file of the store. By
// default the exchange's points are a sample: each kind at one of the
// requests (a different one for each kind) and the last.
func TestKillAtEveryPointResumesWithTheSameRequests(t *testing.T) {
	binary(t)
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ref := newWorld(t, stream)
			require.False(t, ref.run(nil))
			want := bodies(ref.fake.Requests())
			require.Len(t, want, 5)
			for _, r := range ref.fake.Requests() {
				require.Equal(t, 200, r.Status, r.Error)
			}
			require.Contains(t, want[2], akia, "the thinking quotes the key the tool read")
			checkStore(t, ref, 2)

			points := []killPoint{{gate: "gate"}, {gate: "gate2"}}
			kinds := []string{"request", "response"}
			if stream {
				kinds = append(kinds, "partial")
			}
			// The points of the exchange: each kind at a sample of the
			// requests by default (the last always), at every one under
			// SESSIONLOG_SWEEPS=full; the tools' gates always.
			for _, k := range kinds {
				for _, n := range sweep.Points(len(want), 1, t.Name()+"/"+k) {
					points = append(points, killPoint{point: anthropictest.Point{Kind: k, N: n}})
				}
			}
			for _, p := range points {
				t.Run(p.String(), func(t *testing.T) {
					t.Parallel()
					w := newWorld(t, stream)
					require.True(t, w.run(&p), "the run reached the kill point")
					before := bodies(w.fake.Requests())
					w.fake.Reset()
					require.False(t, w.run(nil))
					after := w.fake.Requests()
					for _, r := range after {
						require.Equal(t, 200, r.Status, r.Error)
					}
					expect := want
					if p.gate == "gate2" { // a write tool killed while it ran
						expect = outcomeUnknown(t, want, "toolu_0_1_0")
					}
					require.Equal(t, want[:len(before)], before, "the killed run sent what the uncrashed run sent")
					got := bodies(after)
					from := len(expect) - len(got)
					require.Contains(t, []int{len(before) - 1, len(before)}, from, "the restarted run resumes at the request the killed run sent last, or the one after")
					require.Equal(t, expect[from:], got)
					checkStore(t, w, 2)
				})
			}
		})
	}
}

// checkStore opens the session with the key the example made and checks
// that its turns are done, and that the key is in clear in no file.
func checkStore(t *testing.T, w *world, nTurns int) {
	ctx := context.Background()
	keys, err := provider.LoadOrCreateKeys(filepath.Join(w.root, "config", "sessionlog", "identity"))
	require.NoError(t, err)
	st := file.New(afero.NewOsFs(), w.dir)
	h, created, err := st.OpenOrCreate(ctx, labelMap())
	require.NoError(t, err)
	require.False(t, created)
	defer h.Close()
	conv, err := provider.At(ctx, h, h.Seq(), keys)
	require.NoError(t, err)
	next, err := adapter.Rebuild(conv, effects)
	require.NoError(t, err)
	require.True(t, next.Done)
	require.Equal(t, nTurns, next.Turns)
	require.Empty(t, conv.Degraded)
	require.NoError(t, filepath.WalkDir(w.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(b), akia, path)
		return nil
	}))
}

// TestCrashAfterEveryRecorderPointResumes cuts the uncrashed run's log
// after each durable append of the provider Session (a request, a
// response, a tool's result, a write tool's start mark: where a kill
// leaves the log), and starts the example on it with the same labels and
// key: it must finish, sending the uncrashed run's requests from where
// the log stopped (a write call marked started and without result gets
// the outcome-unknown result).
func TestCrashAfterEveryRecorderPointResumes(t *testing.T) {
	binary(t)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ref := newWorld(t, stream)
			require.False(t, ref.run(nil))
			want := bodies(ref.fake.Requests())
			events := readAll(t, ref)
			key, err := os.ReadFile(filepath.Join(ref.root, "config", "sessionlog", "identity"))
			require.NoError(t, err)
			var cuts []int // event counts at the end of each batch
			for i, e := range events {
				switch e.Type {
				case provider.TypeRequest, provider.TypeResponse, provider.TypeInput, "tool/approval":
					cuts = append(cuts, i)
				}
			}
			cuts = append(cuts, len(events))
			require.Greater(t, len(cuts), 15)
			for _, n := range cuts {
				t.Run(fmt.Sprint(n), func(t *testing.T) {
					t.Parallel()
					w := newWorld(t, stream)
					require.NoError(t, os.MkdirAll(filepath.Join(w.root, "config", "sessionlog"), 0o700))
					require.NoError(t, os.WriteFile(filepath.Join(w.root, "config", "sessionlog", "identity"), key, 0o600))
					h, _, err := file.New(afero.NewOsFs(), w.dir).OpenOrCreate(ctx, labelMap())
					require.NoError(t, err)
					if n > 0 {
						_, err = h.Append(ctx, events[:n]...)
						require.NoError(t, err)
					}
					require.NoError(t, h.Close())
					require.False(t, w.run(nil))
					expect := want
					if n > 0 && events[n-1].Type == "tool/approval" {
						var a struct{ ID string }
						require.NoError(t, json.Unmarshal(events[n-1].Data, &a))
						expect = outcomeUnknown(t, want, a.ID)
					}
					got := bodies(w.fake.Requests())
					for _, r := range w.fake.Requests() {
						require.Equal(t, 200, r.Status, r.Error)
					}
					require.LessOrEqual(t, len(got), len(expect))
					if n == len(events) {
						require.Empty(t, got, "a finished session sends nothing")
					} else {
						require.Equal(t, expect[len(expect)-len(got):], got)
						require.NotEmpty(t, got, "the run resumed the session")
					}
					checkStore(t, w, len(turns))
				})
			}
		})
	}
}

func labelMap() map[string]string {
	ls := map[string]string{}
	for i := 1; i < len(labelArgs); i += 2 {
		k, v, _ := strings.Cut(labelArgs[i], "=")
		ls[k] = v
	}
	return ls
}

func readAll(t *testing.T, w *world) []eventlog.Event {
	ctx := context.Background()
	h, _, err := file.New(afero.NewOsFs(), w.dir).OpenOrCreate(ctx, labelMap())
	require.NoError(t, err)
	defer h.Close()
	var evs []eventlog.Event
	for e, err := range h.Read(ctx, 0, handle.End) {
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}
