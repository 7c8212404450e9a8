package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/localstore"
	"github.com/ethereum/go-ethereum/common"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

func snapshotCommands(e *env) []*cli.Command {
	keyFlag := &cli.StringFlag{Name: "key", Usage: "32-byte key file (or AGENTSTATE_PASSPHRASE)", EnvVars: []string{"AGENTSTATE_KEY"}}
	walrusFlags := []cli.Flag{
		&cli.StringFlag{Name: "walrus-publisher", Usage: "Walrus publisher URL (default: local blob directory)", EnvVars: []string{"AGENTSTATE_WALRUS_PUBLISHER"}},
		&cli.StringFlag{Name: "walrus-aggregator", Usage: "Walrus aggregator URL", EnvVars: []string{"AGENTSTATE_WALRUS_AGGREGATOR"}},
		&cli.Int64Flag{Name: "walrus-part-size", Usage: "split blobs larger than this many bytes into parts under a manifest (default: the public publishers' 10 MiB limit)", EnvVars: []string{"AGENTSTATE_WALRUS_PART_SIZE"}},
		&cli.StringFlag{Name: "blob-dir", Usage: "local blob directory (default <store>/blobs)", EnvVars: []string{"AGENTSTATE_BLOB_DIR"}},
		&cli.StringFlag{Name: "pointer-dir", Usage: "local pointer directory (default <store>/pointers)", EnvVars: []string{"AGENTSTATE_POINTER_DIR"}},
		&cli.StringFlag{Name: "ens", Usage: "ENS name whose agent-snapshot record is the pointer"},
		&cli.StringFlag{Name: "eth-rpc", Usage: "Ethereum JSON-RPC URL for --ens", EnvVars: []string{"AGENTSTATE_ETH_RPC"}},
		&cli.StringFlag{Name: "ens-registry", Usage: "ENS registry address", Value: ens.DefaultRegistryHex},
	}
	return []*cli.Command{
		{Name: "export", Usage: "write REV (default HEAD) as a deterministic tar or a CARv1 file", ArgsUsage: "[REV]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "format", Value: "tar", Usage: "tar or car"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output file (- for stdout)", Required: true},
				&cli.BoolFlag{Name: "receipts", Usage: "include the agent's receipts.ndjson in the tar"},
			}, Action: e.cmdExport},
		{Name: "import", Usage: "commit a tar as the agent's next state", ArgsUsage: "FILE.tar",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "commit message"},
				&cli.BoolFlag{Name: "skip-unsupported", Usage: "skip (and report) links and devices instead of refusing the tar"},
			}, Action: e.cmdImport},
		{Name: "keygen", Usage: "write a new 32-byte snapshot key (mode 0600)", ArgsUsage: " ",
			Flags:  []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "key file to create"}},
			Action: e.cmdKeygen},
		{Name: "push", Usage: "encrypt REV (default HEAD) and ship it to the blob store; repoint the pointer", ArgsUsage: "[REV]",
			Flags: append([]cli.Flag{keyFlag,
				&cli.IntFlag{Name: "epochs", Usage: "Walrus epochs to store for", EnvVars: []string{"AGENTSTATE_WALRUS_EPOCHS"}},
				&cli.BoolFlag{Name: "permanent", Usage: "store a permanent (not deletable) blob"},
				&cli.StringFlag{Name: "eth-key", Usage: "hex secp256k1 key file that signs the ENS update", EnvVars: []string{"AGENTSTATE_ETH_KEY"}},
				jsonFlag}, walrusFlags...),
			Action: e.cmdPush},
		{Name: "restore", Usage: "restore the agent from its pointer (or --blob) into the store", ArgsUsage: " ",
			Flags: append([]cli.Flag{keyFlag,
				&cli.StringFlag{Name: "blob", Usage: "blob id to restore instead of the pointer's"},
				&cli.StringFlag{Name: "expect", Usage: "refuse unless the bundle hash is this 0x... value"},
				jsonFlag}, walrusFlags...),
			Action: e.cmdRestore},
		{Name: "snapshots", Usage: "list pushes and restores: blob id, commit, bundle hash, end epoch", ArgsUsage: " ",
			Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every agent"}, &cli.Int64Flag{Name: "epoch", Usage: "current Walrus epoch, to warn before blobs expire"}, jsonFlag},
			Action: e.cmdSnapshots},
	}
}

func (e *env) cmdExport(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	format := c.String("format")
	if format != "tar" && format != "car" {
		return usagef("--format %q: want tar or car", format)
	}
	rev := revArg(c, 0)
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		return writeOutput(c.String("output"), e.stdout, func(w io.Writer) error {
			if format == "car" {
				st, err := snapshot.WriteCAR(e.ctx, w, r.Blocks, id)
				if err == nil {
					fmt.Fprintf(e.stderr, "exported %s as CAR: %d blocks, %d bytes\n", id.Short(), st.Blocks, st.Bytes)
				}
				return err
			}
			var receipts []byte
			if c.Bool("receipts") {
				if receipts, err = r.Tape.NDJSON(e.ctx, e.agent); err != nil {
					return err
				}
			}
			h, err := r.BundleHash(e.ctx, cm.Tree)
			if err != nil {
				return err
			}
			st, err := snapshot.WriteTar(e.ctx, w, r.Blocks, cm.Tree, h, receipts)
			if err == nil {
				fmt.Fprintf(e.stderr, "exported %s as tar: %d files, %d bytes\n", id.Short(), st.Files, st.TarBytes)
			}
			return err
		})
	})
}

// writeOutput writes to a file atomically (temp + rename), or to stdout for "-".
func writeOutput(path string, stdout io.Writer, fn func(io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := fn(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".agentstate-out-*")
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = fn(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func (e *env) cmdImport(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	f, err := os.Open(c.Args().First())
	if err != nil {
		return err
	}
	defer f.Close()
	return e.withRepo(func(r *repo.Repo) error {
		imp, err := snapshot.ReadTar(e.ctx, bufio.NewReaderSize(f, 1<<20), r.Blocks, c.Bool("skip-unsupported"))
		if err != nil {
			return fmt.Errorf("importing %s (nothing was committed): %w", c.Args().First(), err)
		}
		for _, s := range imp.Skipped {
			fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Type)
		}
		if imp.Lock != nil {
			if err := imp.CheckLineage(nil); err != nil {
				fmt.Fprintf(e.stderr, "agentstate: note: %v\n", err)
			}
		}
		msg := c.String("message")
		if msg == "" {
			msg = "import " + filepath.Base(c.Args().First())
		}
		return e.finishCommit(r, repo.CommitRequest{Agent: e.agent, Tree: imp.Tree, Message: msg, Op: refs.OpImport})
	})
}

func (e *env) cmdKeygen(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	k, err := envelope.GenerateKey(nil)
	if err != nil {
		return err
	}
	out := c.String("output")
	if err := envelope.WriteKeyFile(e.ctx, out, k); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; refusing to overwrite a key", out)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "wrote key %s to %s (keep it safe: snapshots cannot be decrypted without it)\n", k.ID(), out)
	return nil
}

// pipeline builds the pipeline's pieces from flags, environment and config.
func (e *env) pipeline(c *cli.Context, r *repo.Repo, forPush bool) (*snapshot.Pipeline, func(), error) {
	cfg, err := loadConfig(r.Dir)
	if err != nil {
		return nil, nil, err
	}
	pick := func(flag, fromCfg string) string {
		if v := c.String(flag); v != "" {
			return v
		}
		return fromCfg
	}
	cleanup := func() {}
	p := &snapshot.Pipeline{Repo: r}
	// Cipher: key file, else passphrase.
	keyPath := pick("key", cfg.Key)
	switch pass := os.Getenv("AGENTSTATE_PASSPHRASE"); {
	case keyPath != "":
		k, err := envelope.LoadKeyFile(e.ctx, keyPath)
		if errors.Is(err, envelope.ErrKeyFilePermissions) {
			fmt.Fprintf(e.stderr, "agentstate: warning: %v\n", err)
		} else if err != nil {
			return nil, nil, err
		}
		if p.Cipher, err = envelope.NewAESGCM(k, envelope.Options{}); err != nil {
			return nil, nil, err
		}
	case pass != "":
		salt, ok, err := r.Storage.GetMeta(e.ctx, "kdf-salt")
		if err != nil {
			return nil, nil, err
		}
		if !ok && forPush {
			if salt, err = envelope.NewSalt(); err != nil {
				return nil, nil, err
			}
			if err := r.Storage.SetMeta(e.ctx, "kdf-salt", salt); err != nil {
				return nil, nil, err
			}
		}
		if p.Cipher, err = envelope.NewAESGCMPassphrase([]byte(pass), salt, envelope.DefaultKDFParams(), envelope.Options{}); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, usagef("%s needs a key: --key FILE (make one with 'agentstate keygen -o FILE'), AGENTSTATE_KEY, or AGENTSTATE_PASSPHRASE", c.Command.Name)
	}
	// Blob store: Walrus if configured, else the local blob directory.
	pub, agg := pick("walrus-publisher", cfg.Walrus.Publisher), pick("walrus-aggregator", cfg.Walrus.Aggregator)
	if pub != "" || agg != "" {
		if agg == "" {
			agg = pub
		}
		if pub == "" {
			pub = agg
		}
		var hopts []httpstore.Option
		partSize := c.Int64("walrus-part-size")
		if partSize == 0 {
			partSize = cfg.Walrus.PartSize
		}
		if partSize < 0 {
			return nil, nil, usagef("--walrus-part-size %d: must be positive", partSize)
		}
		if partSize > 0 {
			hopts = append(hopts, httpstore.WithPartSize(partSize))
		}
		if p.Blobs, err = httpstore.New(pub, agg, hopts...); err != nil {
			return nil, nil, err
		}
	} else {
		dir := pick("blob-dir", cfg.BlobDir)
		if dir == "" {
			dir = filepath.Join(r.Dir, "blobs")
		}
		if p.Blobs, err = localstore.Open(dir); err != nil {
			return nil, nil, err
		}
	}
	// Pointer: ENS if named, else a pointer file.
	name := c.String("ens")
	if name == "" {
		name = cfg.ENS.Names[e.agent]
	}
	if name != "" {
		rpc := pick("eth-rpc", cfg.ENS.RPC)
		if rpc == "" {
			return nil, nil, usagef("--ens %s needs --eth-rpc URL (or AGENTSTATE_ETH_RPC)", name)
		}
		reg := c.String("ens-registry")
		if cfg.ENS.Registry != "" && !c.IsSet("ens-registry") {
			reg = cfg.ENS.Registry
		}
		if !common.IsHexAddress(reg) {
			return nil, nil, usagef("--ens-registry %q is not an address", reg)
		}
		client, err := ens.Dial(e.ctx, rpc, common.HexToAddress(reg))
		if err != nil {
			return nil, nil, err
		}
		cleanup = client.Close
		ptr := ens.SnapshotPointer{Client: client, Names: func(string) (string, error) { return name, nil }}
		if forPush {
			keyFile := c.String("eth-key")
			if keyFile == "" {
				keyFile = cfg.ENS.EthKey
			}
			if keyFile == "" {
				cleanup()
				return nil, nil, usagef("--ens needs --eth-key FILE to sign the record update")
			}
			if ptr.Signer, err = ens.LoadKeyFile(keyFile); err != nil {
				cleanup()
				return nil, nil, err
			}
		}
		p.Pointer = ptr
	} else {
		dir := pick("pointer-dir", cfg.PointerDir)
		if dir == "" {
			dir = filepath.Join(r.Dir, "pointers")
		}
		p.Pointer = snapshot.FilePointer{Dir: dir}
	}
	return p, cleanup, nil
}

func (e *env) progress(label string) (func(done, total int64), func()) {
	if !isTerminal(e.stderr) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(e.stderr), progressbar.OptionShowBytes(true),
					progressbar.OptionSetDescription(label), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			bar.Set64(done)
		}, func() {
			if bar != nil {
				bar.Finish()
			}
		}
}

func (e *env) cmdPush(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	rev := revArg(c, 0)
	return e.withRepo(func(r *repo.Repo) error {
		id, err := r.Resolve(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		p, cleanup, err := e.pipeline(c, r, true)
		if err != nil {
			return err
		}
		defer cleanup()
		cfg, _ := loadConfig(r.Dir)
		p.Options.Epochs = c.Int("epochs")
		if p.Options.Epochs == 0 {
			p.Options.Epochs = cfg.Walrus.Epochs
		}
		p.Options.Permanent = c.Bool("permanent") || cfg.Walrus.Permanent
		var done func()
		p.Options.Progress, done = e.progress("push")
		rec, err := p.Push(e.ctx, e.agent, id)
		done()
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(rec)
		}
		state := "stored"
		if rec.AlreadyCertified {
			state = "already stored"
		}
		fmt.Fprintf(e.stdout, "pushed %s (bundle %s) as blob %s: %d bytes, %s", rec.Commit.Short(), rec.BundleHash, rec.BlobID, rec.Size, state)
		if rec.EndEpoch > 0 {
			fmt.Fprintf(e.stdout, ", until epoch %d", rec.EndEpoch)
		}
		fmt.Fprintf(e.stdout, "\npointer: %s\n", rec.Pointer)
		return nil
	})
}

func (e *env) cmdRestore(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	var opts snapshot.RestoreOptions
	if b := c.String("blob"); b != "" {
		id, err := walrus.ParseBlobID(b)
		if err != nil {
			return err
		}
		opts.BlobID = id
	}
	if x := c.String("expect"); x != "" {
		h, err := objects.ParseBundleHash(x)
		if err != nil {
			return usagef("--expect: %v", err)
		}
		opts.Expect = &h
	}
	return e.withRepoCreate(func(r *repo.Repo) error {
		p, cleanup, err := e.pipeline(c, r, false)
		if err != nil {
			return err
		}
		defer cleanup()
		var done func()
		opts.Progress, done = e.progress("restore")
		rec, err := p.Restore(e.ctx, e.agent, opts)
		done()
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(rec)
		}
		fmt.Fprintf(e.stdout, "restored %s from blob %s: HEAD at %s, tree %s, bundle %s, %d receipts re-ingested\n",
			e.agent, rec.BlobID, rec.Commit.Short(), rec.Tree, rec.BundleHash, rec.Receipts)
		return nil
	})
}

// withRepoCreate opens the store, creating it first if it does not exist
// (restore onto a wiped machine). When fn fails, a store it created is
// removed again, so a failed restore leaves the disk as it found it.
func (e *env) withRepoCreate(fn func(r *repo.Repo) error) error {
	var dir string
	if _, err := e.storeDir(); errors.Is(err, repo.ErrNoStore) {
		dir, _ = filepath.Abs(repo.DirName)
	} else if e.storeFlag != "" {
		if _, err := os.Stat(filepath.Join(e.storeFlag, "MANIFEST")); errors.Is(err, fs.ErrNotExist) {
			dir = e.storeFlag
		}
	}
	if dir == "" {
		return e.withRepo(fn)
	}
	undo, err := undoCreate(dir)
	if err != nil {
		return err
	}
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		undo()
		return err
	}
	r.Close()
	if err := e.withRepo(fn); err != nil {
		undo()
		return err
	}
	fmt.Fprintf(e.stderr, "created store %s\n", dir)
	return nil
}

// undoCreate returns a function that removes what creating a store in dir
// adds: the topmost directory that does not exist yet, or, when dir exists
// (it must then be empty to become a store), its new entries.
func undoCreate(dir string) (func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err == nil {
		before, err := os.ReadDir(abs)
		if err != nil {
			return nil, err
		}
		had := map[string]bool{}
		for _, e := range before {
			had[e.Name()] = true
		}
		return func() {
			ents, _ := os.ReadDir(abs)
			for _, e := range ents {
				if !had[e.Name()] {
					os.RemoveAll(filepath.Join(abs, e.Name()))
				}
			}
		}, nil
	}
	top := abs
	for {
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		if _, err := os.Stat(parent); err == nil {
			break
		}
		top = parent
	}
	return func() { os.RemoveAll(top) }, nil
}

func (e *env) cmdSnapshots(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		agent := e.agent
		if c.Bool("all") {
			agent = ""
		}
		recs, err := snapshot.Records(e.ctx, r, agent)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if recs == nil {
				recs = []snapshot.Record{}
			}
			return e.writeJSON(recs)
		}
		epoch := c.Int64("epoch")
		for i := len(recs) - 1; i >= 0; i-- {
			rec := recs[i]
			if rec.Error != "" {
				fmt.Fprintf(e.stdout, "%s %-7s %-8s FAILED %s: %s\n", fmtTime(rec.Time), rec.Op, rec.Agent, rec.Commit.Short(), oneLine(rec.Error))
				continue
			}
			line := fmt.Sprintf("%s %-7s %-8s %s %s %s", fmtTime(rec.Time), rec.Op, rec.Agent, rec.BlobID, rec.Commit.Short(), rec.BundleHash)
			if rec.EndEpoch > 0 {
				line += fmt.Sprintf(" until epoch %d", rec.EndEpoch)
				if epoch > 0 && rec.EndEpoch-epoch <= 1 {
					line += " (EXPIRES SOON: push again)"
				}
				if epoch > 0 && rec.EndEpoch <= epoch {
					line += " (EXPIRED)"
				}
			}
			fmt.Fprintln(e.stdout, line)
		}
		return nil
	})
}
