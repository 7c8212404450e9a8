//go:build !lean

package cli

import (
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/runtime/web"
	"github.com/urfave/cli/v2"
)

func newServeCommand(e *env) *cli.Command {
	cmd := &cli.Command{Name: "serve", Usage: "hold the store and serve it to every other command (foreground)", ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "also serve on TCP at `ADDR` (HOST:PORT): the repository API, and MCP over HTTP at /mcp; needs a token file"},
			&cli.StringFlag{Name: "token-file", Usage: "read-write bearer tokens for TCP, one per line of `FILE`"},
			&cli.StringFlag{Name: "read-token-file", Usage: "read-only bearer tokens for TCP, one per line of `FILE`"},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve TCP with TLS: PEM certificate (chain) `FILE`"},
			&cli.StringFlag{Name: "tls-key", Usage: "PEM private key `FILE` of --tls-cert"},
			&cli.StringSliceFlag{Name: "http-host", Usage: "a host name (`HOST`) browsers reach the TCP address by without TLS (beside IP addresses and localhost; others are refused: DNS rebinding); repeatable"},
			&cli.BoolFlag{Name: "ui", Usage: "serve the time-travel page at / of the TCP address (without --listen: 127.0.0.1, a free port, and a read-only token made for this run)"},
			&cli.DurationFlag{Name: "forget-every", Usage: "with --keep-* flags: apply that retention policy to every agent every `DURATION`, beside the writers (default 1h)"},
		},
		Action: e.runServe}
	cmd.Flags = append(cmd.Flags, policyFlags()...)
	return cmd
}

func (e *env) runServe(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	if e.served != nil {
		return fmt.Errorf("this store is already served by this process (pid %d)", os.Getpid())
	}
	opts := remote.Options{Holder: "agentstate serve", Exec: Exec, Listen: c.String("listen"), HTTPHosts: c.StringSlice("http-host")}
	var err error
	if opts.Tokens, err = e.readTokens(c.String("token-file")); err != nil {
		return err
	}
	if opts.ReadTokens, err = e.readTokens(c.String("read-token-file")); err != nil {
		return err
	}
	ui, madeToken := c.Bool("ui"), ""
	if ui && opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if ui && len(opts.Tokens)+len(opts.ReadTokens) == 0 {
		// The page only reads: a read-only token of this run's, printed in
		// the page's address.
		madeToken = rand.Text()
		opts.ReadTokens = []string{madeToken}
	}
	if opts.Listen != "" && len(opts.Tokens)+len(opts.ReadTokens) == 0 {
		return usagef("--listen needs --token-file or --read-token-file: TCP clients must present a token")
	}
	policy, err := policyOf(c)
	if err != nil {
		return err
	}
	if c.IsSet("forget-every") && policy.IsZero() {
		return usagef("--forget-every needs a policy: --keep-* flags")
	}
	if cert, key := c.String("tls-cert"), c.String("tls-key"); cert != "" || key != "" {
		if opts.Listen == "" || cert == "" || key == "" {
			return usagef("--tls-cert and --tls-key go together, with --listen")
		}
		certPEM, _, err := e.readInput(cert, maxSecretFile)
		var keyPEM []byte
		if err == nil {
			keyPEM, _, err = e.readInput(key, maxSecretFile)
		}
		var pair tls.Certificate
		if err == nil {
			pair, err = tls.X509KeyPair(certPEM, keyPEM)
			clear(keyPEM)
		}
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	}
	dir, err := e.storeDir()
	if err != nil {
		return err
	}
	if c, err := remote.Dial(e.ctx, remote.SocketPath(dir), remote.DialOptions{}); err == nil {
		st, serr := c.Status(e.ctx)
		c.Close()
		if serr == nil {
			return fmt.Errorf("%s is already served by %s (pid %d)", dir, st.Holder, st.PID)
		}
		return fmt.Errorf("%s is already served", dir)
	}
	r, err := e.open()
	if errors.Is(err, badger.ErrInUse) {
		return fmt.Errorf("%w (a process that holds the store without serving it: stop it, or let it serve)", err)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	// Client commands read the client's environment (envFlags), never this
	// process's.
	for _, v := range boundEnvVars(&env{}) {
		os.Unsetenv(v)
	}
	opts.Logf = func(format string, a ...any) { fmt.Fprintf(e.stderr, "agentstate serve: "+format+"\n", a...) }
	if opts.Listen != "" {
		opts.HTTP = web.Handler(r, web.Options{Agent: e.agent, UI: ui})
	}
	srv, err := remote.Start(r, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "agentstate: serving %s on %s (pid %d; Ctrl-C stops)\n", dir, strings.Join(srv.Addrs(), " and "), os.Getpid())
	if addr := srv.TCPAddr(); addr != "" {
		u := remote.URL(addr, opts.TLS)
		fmt.Fprintf(e.stderr, "agentstate: MCP (streamable HTTP) at %smcp with 'Authorization: Bearer TOKEN'\n", u)
		switch {
		case ui && madeToken != "":
			fmt.Fprintf(e.stderr, "agentstate: page at %s?token=%s\n", u, madeToken)
		case ui:
			fmt.Fprintf(e.stderr, "agentstate: page at %s?token=TOKEN (a token of --token-file or --read-token-file)\n", u)
		}
	}
	if !policy.IsZero() {
		every := c.Duration("forget-every")
		if every <= 0 {
			every = time.Hour
		}
		fmt.Fprintf(e.stderr, "agentstate: forgetting every %s: %s\n", every, policy)
		go e.retain(r, policy, every)
	}
	<-e.ctx.Done()
	srv.Close()
	fmt.Fprintf(e.stderr, "agentstate: stopped serving %s\n", dir)
	return nil
}

// readTokens reads a token file: one token per line, blank lines and lines
// starting with # skipped. The file (or FIFO) must not be readable by
// others; a pipe (--token-file <(cmd)) is the reader's own.
func (e *env) readTokens(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, mode, err := e.readInput(path, maxSecretFile)
	if err != nil {
		return nil, err
	}
	if keyFilePerm(path, mode) != nil {
		return nil, fmt.Errorf("%s: token file is readable by others (chmod 600 %s)", path, path)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if len(l) < 16 {
			return nil, fmt.Errorf("%s: a token shorter than 16 characters", path)
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return out, nil
}

// retain applies a retention policy to every agent every interval until the
// command ends: forget waits for the writers in flight, as gc does.
func (e *env) retain(r *repo.Repo, p repo.Policy, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
		}
		heads, err := r.Refs.Agents(e.ctx)
		if err != nil {
			fmt.Fprintf(e.stderr, "agentstate serve: forget: %v\n", err)
			continue
		}
		agents := make([]string, len(heads))
		for i, h := range heads {
			agents[i] = h.Agent
		}
		// Every agent's cut, then one collection: it walks the whole store.
		reps, gc, err := r.ForgetAgents(e.ctx, agents, p, false)
		if e.ctx.Err() != nil {
			return
		}
		for _, rep := range reps {
			if !rep.Unchanged {
				fmt.Fprintf(e.stderr, "agentstate serve: forget %s: cut %d operations, %d commits\n", rep.Agent, rep.CutOps, rep.CutCommits)
			}
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "agentstate serve: %s\n", oneLine(err.Error()))
		}
		if gc.Deleted > 0 {
			fmt.Fprintf(e.stderr, "agentstate serve: forget: freed %d unreachable blocks (%d bytes)\n", gc.Deleted, gc.BytesFreed)
		}
	}
}
