package natstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Real server processes, for what an in-process server cannot show: a
// node killed without shutting down (SIGKILL) or frozen (SIGSTOP), as a
// power cut or a stalled host would leave it.

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Build compiles nats-server from the module's go.sum into a temp folder
// (once per process; RemoveBuilt deletes it) and returns the binary's
// path. Nothing is downloaded: the build runs with GOPROXY=off and
// -mod=readonly, so a module missing from the cache fails it. Under -race
// it is built with -race too, which reuses the packages the test binary
// compiled.
func Build() (string, error) {
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "natstest-server-")
		if err != nil {
			built.err = err
			return
		}
		built.dir, built.bin = dir, filepath.Join(dir, "nats-server")
		args := []string{"build", "-mod=readonly", "-o", built.bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "github.com/nats-io/nats-server/v2")...)
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	return built.bin, built.err
}

// RemoveBuilt deletes what Build made; call it when the process is done
// (Main does).
func RemoveBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// Main runs a package's tests, then RemoveBuilt: use it as the TestMain
// of a package that starts server processes.
func Main(m *testing.M) {
	code := m.Run()
	RemoveBuilt()
	os.Exit(code)
}

// BuildOrSkip is Build for a test: a build that fails skips the test with
// the reason, or fails it when the environment says CI=true (where the
// cluster tests must run).
func BuildOrSkip(tb testing.TB) string {
	tb.Helper()
	bin, err := Build()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("cannot build nats-server under CI: %v", err)
		}
		tb.Skipf("cannot build nats-server (set CI=true to make this a failure): %v", err)
	}
	return bin
}

// Procs is a set of nats-server processes on loopback: one node, or a
// cluster of several routed to each other, each node with JetStream in its
// own folder and sync_interval: always.
type Procs struct {
	bin, dir string
	nodes    []*proc
}

type proc struct {
	name                     string
	port, clusterPort, mport int
	dir, conf, log           string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool
}

// StartProcs starts n nodes of binary bin, with their folders, configs and
// logs under dir. n = 1 is a single server; more is a cluster named
// "sessionlog".
func StartProcs(bin, dir string, n int) (*Procs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &Procs{bin: bin, dir: dir}
	var routes []string
	for i := range n {
		nd := &proc{name: fmt.Sprintf("n%d", i)}
		for _, port := range []*int{&nd.port, &nd.clusterPort, &nd.mport} {
			var err error
			if *port, err = pickPort(); err != nil {
				return nil, err
			}
		}
		nd.dir = filepath.Join(dir, nd.name)
		nd.conf, nd.log = nd.dir+".conf", nd.dir+".log"
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", nd.clusterPort))
		p.nodes = append(p.nodes, nd)
	}
	for _, nd := range p.nodes {
		conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\nlog_file: %q\n"+
			"jetstream {\n  store_dir: %q\n  sync_interval: always\n}\n", nd.name, nd.port, nd.mport, nd.log, nd.dir)
		if n > 1 {
			conf += fmt.Sprintf("cluster {\n  name: sessionlog\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n",
				nd.clusterPort, strings.Join(routes, ", "))
		}
		if err := os.WriteFile(nd.conf, []byte(conf), 0o600); err != nil {
			return nil, err
		}
	}
	for i := range p.nodes {
		if err := p.Start(i); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// RunProcs is StartProcs for a test: the binary is built (BuildOrSkip),
// the nodes live in a temp folder and are killed when the test ends; a
// failed test shows the end of each node's log.
func RunProcs(tb testing.TB, n int) *Procs {
	tb.Helper()
	bin := BuildOrSkip(tb)
	p, err := StartProcs(bin, tb.TempDir(), n)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Close()
		if tb.Failed() {
			for i := range p.nodes {
				tb.Logf("log of %s (end):\n%s", p.Name(i), p.LogTail(i, 30))
			}
		}
	})
	return p
}

// pickPort returns a loopback port free now.
func pickPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// N is the number of nodes.
func (p *Procs) N() int { return len(p.nodes) }

// Start starts node i (again, on its folder and ports) and waits until it
// accepts connections.
func (p *Procs) Start(i int) error {
	nd := p.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		return fmt.Errorf("natstest: %s is running", nd.name)
	}
	cmd := exec.Command(p.bin, "-c", nd.conf)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("natstest: start %s: %w", nd.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	nd.cmd, nd.exited, nd.stopped = cmd, exited, false
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case <-exited:
			nd.cmd = nil
			return fmt.Errorf("natstest: %s exited at start:\n%s", nd.name, p.LogTail(i, 20))
		default:
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", nd.port), time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natstest: %s does not accept connections", nd.name)
		}
	}
}

// Kill ends node i with SIGKILL (nothing flushed, no leadership handed
// over) and waits until it is gone.
func (p *Procs) Kill(i int) error {
	nd := p.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return nil
	}
	if err := nd.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-nd.exited
	nd.cmd = nil
	return nil
}

// Stop freezes node i (SIGSTOP): its sockets stay open, it answers
// nothing.
func (p *Procs) Stop(i int) error { return p.signal(i, syscall.SIGSTOP, true) }

// Cont resumes node i after Stop.
func (p *Procs) Cont(i int) error { return p.signal(i, syscall.SIGCONT, false) }

func (p *Procs) signal(i int, sig syscall.Signal, stopped bool) error {
	nd := p.nodes[i]
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd == nil {
		return fmt.Errorf("natstest: %s is not running", nd.name)
	}
	nd.stopped = stopped
	return nd.cmd.Process.Signal(sig)
}

// Close kills every node.
func (p *Procs) Close() {
	for i, nd := range p.nodes {
		nd.mu.Lock()
		if nd.cmd != nil && nd.stopped {
			nd.cmd.Process.Signal(syscall.SIGCONT)
		}
		nd.mu.Unlock()
		p.Kill(i)
	}
}

// Name returns node i's server name.
func (p *Procs) Name(i int) string { return p.nodes[i].name }

// Index returns the node named name, or -1.
func (p *Procs) Index(name string) int {
	for i, nd := range p.nodes {
		if nd.name == name {
			return i
		}
	}
	return -1
}

// URL returns node i's client URL.
func (p *Procs) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", p.nodes[i].port) }

// URLs returns the client URLs of the nodes given (all when none),
// comma-separated, in that order.
func (p *Procs) URLs(nodes ...int) string {
	var urls []string
	for _, i := range p.order(nodes) {
		urls = append(urls, p.URL(i))
	}
	return strings.Join(urls, ",")
}

// Hosts is URLs as a store URL names them: host:port,host:port…
func (p *Procs) Hosts(nodes ...int) string {
	var hosts []string
	for _, i := range p.order(nodes) {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", p.nodes[i].port))
	}
	return strings.Join(hosts, ",")
}

func (p *Procs) order(nodes []int) []int {
	if len(nodes) == 0 {
		for i := range p.nodes {
			nodes = append(nodes, i)
		}
	}
	return nodes
}

// Healthy reports whether node i's /healthz answers ok: JetStream up and
// every stream and consumer it holds current.
func (p *Procs) Healthy(i int) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", p.nodes[i].mport))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// StreamState is what node i holds of stream: its last seq and the
// leader it knows (empty when none, or when node i does not answer).
func (p *Procs) StreamState(i int, stream string) (lastSeq uint64, leader string) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz?accounts=true&streams=true", p.nodes[i].mport))
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	var info server.JSInfo
	if json.NewDecoder(resp.Body).Decode(&info) != nil {
		return 0, ""
	}
	for _, acc := range info.AccountDetails {
		for _, sd := range acc.Streams {
			if sd.Name == stream {
				if sd.Cluster != nil {
					leader = sd.Cluster.Leader
				}
				return sd.State.LastSeq, leader
			}
		}
	}
	return 0, ""
}

// LogTail returns the last n lines of node i's log.
func (p *Procs) LogTail(i, n int) string {
	b, _ := os.ReadFile(p.nodes[i].log)
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-n):], []byte("\n")))
}
