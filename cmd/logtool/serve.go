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

	"github.com/sessionlog/sessionlog/internal/app/web"
)

func (a *app) newServeCmd() *cobra.Command {
	var addr string
	var open bool
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:0] [--open]",
		Short: "Browse a store's sessions in a web browser (read-only, local)",
		Long: `Serve is a read-only web view of the store, in the binary: pages rendered
on the server, a little plain JavaScript, nothing fetched from elsewhere.
It prints the URL to open and serves until interrupted. The store is --dir
or --store (a JetStream store, named by any of its servers: see Examples).

  /                     the sessions, newest first (their headers alone
                        tell), 100 a page; ?sort=active the last active
                        first, as ls lists them (every session read),
                        ?sort=size|events|tree; ?q= a part of the ID or a
                        label (k=v), ?text= sessions whose events hold it
  /s/ID                 the last 400 events in turns, folded as show folds
                        them; forks, children, the timeline; it follows the
                        log as tail -f does; an event whose secrets were
                        redacted says where and of what kinds, as show does
  /s/ID/events          the events as stored, ?from=S&to=S
  /diff?a=A&b=B         where two sessions part (&as=S&bs=S: from seqs)
  /s/ID/verify          verify of the session, on demand
  /api/ls, /api/tree, /api/stat/ID, /api/verify/ID, /api/replay/ID
                        what ls, ls --tree, stat, verify and replay print

ID may be any name SESSION takes: the server redirects to the session's ID
(an ambiguous name shows its candidates). It binds to --addr (loopback, a
free port); every request must carry the URL's token (kept in a cookie)
and a Host header naming the bound address; only GET and HEAD are served,
through a store opened read-only (a folder through a read-only file
system; on JetStream every write refused), so no request changes it.
Event data is shown as text, under a strict Content-Security-Policy.`,
		Example: `  $ logtool serve --dir sessions --open
  $ logtool serve --store 'nats://h1:4222,h2:4222,h3:4222/prod?replicas=3&sync=always'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runServe(cmd.Context(), addr, open)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on, `host:port` (port 0: any free one)")
	cmd.Flags().BoolVar(&open, "open", false, "open the URL in the system's browser")
	return cmd
}

func (a *app) runServe(ctx context.Context, addr string, open bool) error {
	// Every read of the server goes through a store open read-only (a
	// folder's through a read-only file system): the derived caches a
	// reader would refresh are left as they are too.
	ro := *a
	ro.fs = afero.NewReadOnlyFs(a.fs)
	ro.stderr = io.Discard // the store's warnings (torn tails): the pages show them
	ro.st, ro.closers, ro.readOnly = nil, nil, true
	defer ro.closeStores()
	st, err := ro.sessions(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("listen on %q: %v", addr, err)
	}
	defer ln.Close()
	srv, err := web.New(st, ln.Addr().String(), web.WithClock(a.now))
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
