package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/afero"
	"github.com/spf13/cobra"

	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/internal/web"
)

func (a *app) newServeCmd() *cobra.Command {
	var addr string
	var open bool
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:0] [--open]",
		Short: "Browse the sessions of --dir in a web browser (read-only, local)",
		Long: `Serve starts a read-only web view of the store in --dir: the session list
(search, sort, the fork/child tree, stop and verdict), each session's turns
with its branches, forks and a timeline, the diff of two sessions, verify on
demand, and a live view that follows a session being written. /api/ls,
/api/tree, /api/stat/ID, /api/verify/ID and /api/replay/ID?projection=P answer
with what ls --json, ls --tree --json, stat --json, verify --json and replay
print.

It binds to --addr (default 127.0.0.1 and a free port; another address only
when given) and prints the URL to open, which holds a random token: every
request must carry it (the page keeps it in a cookie) and a Host header naming
the bound address. Only GET and HEAD are served and the store is opened through
a read-only file system: nothing a request does can change it. --open starts
the system's browser on the URL. Serve runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runServe(cmd.Context(), addr, open)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on, host:port (port 0: any free one)")
	cmd.Flags().BoolVar(&open, "open", false, "open the URL in the system's browser")
	return cmd
}

func (a *app) runServe(ctx context.Context, addr string, open bool) error {
	// Every read of the server goes through a read-only file system: the
	// derived caches a reader would refresh are left as they are too.
	ro := *a
	ro.fs = afero.NewReadOnlyFs(a.fs)
	ro.stderr = io.Discard // the CLI's notes (torn tails) are in the pages
	ro.st, ro.closers = nil, nil
	st, err := ro.folder(ctx, "serve")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("listen on %q: %v", addr, err)
	}
	defer ln.Close()
	srv, err := web.New(st, serveAPI{&ro}, ln.Addr().String())
	if err != nil {
		return err
	}
	u := (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/", RawQuery: url.Values{"token": {srv.Token()}}.Encode()}).String()
	fmt.Fprintln(a.stdout, u)
	if open {
		if err := openBrowser(u); err != nil {
			fmt.Fprintf(a.stderr, "logtool: --open: %v (open the URL above by hand)\n", err)
		}
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	hs.Shutdown(shut) // live streams end with their requests' contexts
	hs.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openBrowser starts the system's browser on u, without waiting for it.
func openBrowser(u string) error {
	name, args := "xdg-open", []string{u}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", u}
	}
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

// serveAPI answers the server's /api/ with the commands' own JSON output.
type serveAPI struct{ a *app }

func (s serveAPI) Ls(ctx context.Context, w io.Writer) error {
	return s.a.runLs(ctx, s.a.dir, false, true, lsOptions{}, w)
}

func (s serveAPI) Tree(ctx context.Context, w io.Writer) error {
	return s.a.runLsTree(ctx, s.a.dir, false, true, w)
}

func (s serveAPI) Stat(ctx context.Context, id string, w io.Writer) error {
	return s.a.runStat(ctx, id, true, w)
}

func (s serveAPI) Verify(ctx context.Context, id string, w io.Writer) error {
	return s.a.runVerify(ctx, []string{id}, true, w)
}

func (s serveAPI) Replay(ctx context.Context, id, projection string, w io.Writer) error {
	return s.a.runReplay(ctx, id, replayOptions{projection: projection}, w)
}

var _ web.Store = (*handle.FileStore)(nil)
