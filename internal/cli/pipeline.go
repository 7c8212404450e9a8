//go:build !lean

package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"filippo.io/age"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/localstore"
	"github.com/ethereum/go-ethereum/common"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

// pipeline builds the pipeline's pieces from flags, environment and config.
func (e *env) pipeline(c *cli.Context, r *repo.Repo, forPush bool) (*snapshot.Pipeline, func(), error) {
	cfg, err := loadConfig(r.Dir)
	if err != nil {
		return nil, nil, err
	}
	// Paths given as flags are the user's (relative to the working
	// directory); the config's are as written there.
	pick := func(flag, fromCfg string) string {
		if v := c.String(flag); v != "" {
			return v
		}
		return fromCfg
	}
	pickPath := func(flag, fromCfg string) string {
		if v := c.String(flag); v != "" {
			return e.path(v)
		}
		return fromCfg
	}
	cleanup := func() {}
	p := &snapshot.Pipeline{Repo: r}
	if p.Cipher, err = e.cipher(c, r, pickPath("key", cfg.Key), forPush); err != nil {
		return nil, nil, err
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
		dir := pickPath("blob-dir", cfg.BlobDir)
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
			keyFile := e.path(c.String("eth-key"))
			if keyFile == "" {
				keyFile = cfg.ENS.EthKey
			}
			if keyFile == "" {
				cleanup()
				return nil, nil, usagef("--ens needs --eth-key FILE to sign the record update")
			}
			b, _, err := e.readInput(keyFile, maxSecretFile)
			if err == nil {
				ptr.Signer, err = ens.ParseKey(b)
				clear(b)
			}
			if err != nil {
				cleanup()
				return nil, nil, fmt.Errorf("--eth-key %s: %w", keyFile, err)
			}
		}
		p.Pointer = ptr
	} else {
		dir := pickPath("pointer-dir", cfg.PointerDir)
		if dir == "" {
			dir = filepath.Join(r.Dir, "pointers")
		}
		p.Pointer = snapshot.FilePointer{Dir: dir}
	}
	return p, cleanup, nil
}

// cipher builds the snapshot cipher. push: age recipients (--recipient,
// --recipients-file) when given, which replace the symmetric key for that
// push; else the key file, else the passphrase. restore: a cipher that tells
// the blob's format from its first bytes and decrypts an AGSENV envelope with
// the key file or passphrase, an age file with the --identity files.
func (e *env) cipher(c *cli.Context, r *repo.Repo, keyPath string, forPush bool) (envelope.Cipher, error) {
	if forPush {
		recipients, err := e.recipients(c)
		if err != nil {
			return nil, err
		}
		if len(recipients) > 0 {
			return envelope.NewAgeEncrypter(recipients...)
		}
		aes, err := e.aesCipher(r, keyPath, true)
		if err == nil && aes == nil {
			err = usagef("push needs a key: --key FILE (make one with 'agentstate keygen -o FILE'), AGENTSTATE_KEY, or AGENTSTATE_PASSPHRASE; or --recipient age1... to encrypt to an operator's age public key")
		}
		return aes, err
	}
	aes, err := e.aesCipher(r, keyPath, false)
	if err != nil {
		return nil, err
	}
	var ids []age.Identity
	for _, path := range c.StringSlice("identity") {
		if path == "" {
			continue // AGENTSTATE_IDENTITY set but empty
		}
		b, mode, err := e.readInput(path, maxSecretFile)
		if err != nil {
			return nil, fmt.Errorf("identity file: %w", err)
		}
		got, err := envelope.ParseAgeIdentities(b)
		clear(b)
		if err != nil {
			return nil, fmt.Errorf("identity file %s: %w", path, err)
		}
		if err := keyFilePerm(path, mode); err != nil {
			fmt.Fprintf(e.stderr, "agentstate: warning: %v\n", err)
		}
		ids = append(ids, got...)
	}
	d := &envelope.Detect{}
	if aes != nil {
		d.AES = aes
	}
	if len(ids) > 0 {
		if d.Age, err = envelope.NewAgeDecrypter(ids...); err != nil {
			return nil, err
		}
	}
	if d.AES == nil && d.Age == nil {
		return nil, usagef("restore needs a key: --key FILE, AGENTSTATE_KEY or AGENTSTATE_PASSPHRASE for a snapshot sealed with a key, --identity FILE for one encrypted to an age recipient")
	}
	return d, nil
}

// aesCipher returns the AES-256-GCM envelope cipher of the key file, else of
// AGENTSTATE_PASSPHRASE, or nil when there is neither.
func (e *env) aesCipher(r *repo.Repo, keyPath string, forPush bool) (*envelope.AESGCM, error) {
	switch pass := e.getenv("AGENTSTATE_PASSPHRASE"); {
	case keyPath != "":
		b, mode, err := e.readInput(keyPath, maxSecretFile)
		if err != nil {
			return nil, fmt.Errorf("key file: %w", err)
		}
		k, err := envelope.ParseKeyFile(b)
		clear(b)
		if err != nil {
			return nil, fmt.Errorf("key file %s: %w", keyPath, err)
		}
		if err := keyFilePerm(keyPath, mode); err != nil {
			fmt.Fprintf(e.stderr, "agentstate: warning: %v\n", err)
		}
		return envelope.NewAESGCM(k, envelope.Options{})
	case pass != "":
		salt, ok, err := r.Storage.GetMeta(e.ctx, "kdf-salt")
		if err != nil {
			return nil, err
		}
		if !ok && forPush {
			if salt, err = envelope.NewSalt(); err != nil {
				return nil, err
			}
			if err := r.Storage.SetMeta(e.ctx, "kdf-salt", salt); err != nil {
				return nil, err
			}
		}
		return envelope.NewAESGCMPassphrase([]byte(pass), salt, envelope.DefaultKDFParams(), envelope.Options{})
	}
	return nil, nil
}

// recipients returns push's age recipients: every --recipient, then the
// lines of --recipients-file.
func (e *env) recipients(c *cli.Context) ([]string, error) {
	out := slices.Clone(c.StringSlice("recipient"))
	for _, r := range out {
		if _, err := envelope.ParseAgeRecipient(r); err != nil {
			return nil, usagef("--recipient: %v", err)
		}
	}
	if path := c.String("recipients-file"); path != "" {
		f, err := e.openInput(path, "")
		if err != nil {
			return nil, fmt.Errorf("--recipients-file: %w", err)
		}
		defer f.Close()
		more, err := envelope.ParseAgeRecipients(f)
		if err != nil {
			return nil, fmt.Errorf("--recipients-file %s: %w", path, err)
		}
		out = append(out, more...)
	}
	return out, nil
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

// walrusFlags are the blob store and pointer flags of push and restore (see
// pipeline).
func walrusFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "walrus-publisher", Usage: "Walrus publisher `URL` (default: local blob directory)", EnvVars: []string{"AGENTSTATE_WALRUS_PUBLISHER"}},
		&cli.StringFlag{Name: "walrus-aggregator", Usage: "Walrus aggregator `URL`", EnvVars: []string{"AGENTSTATE_WALRUS_AGGREGATOR"}},
		&cli.Int64Flag{Name: "walrus-part-size", Usage: "split blobs larger than `BYTES` into parts under a manifest (default: the public publishers' 10 MiB limit)", EnvVars: []string{"AGENTSTATE_WALRUS_PART_SIZE"}},
		&cli.StringFlag{Name: "blob-dir", Usage: "local blob `DIR` (default <store>/blobs)", EnvVars: []string{"AGENTSTATE_BLOB_DIR"}},
		&cli.StringFlag{Name: "pointer-dir", Usage: "local pointer `DIR` (default <store>/pointers)", EnvVars: []string{"AGENTSTATE_POINTER_DIR"}},
		&cli.StringFlag{Name: "ens", Usage: "ENS `NAME` whose agent-snapshot record is the pointer"},
		&cli.StringFlag{Name: "eth-rpc", Usage: "Ethereum JSON-RPC `URL` for --ens", EnvVars: []string{"AGENTSTATE_ETH_RPC"}},
		&cli.StringFlag{Name: "ens-registry", Usage: "ENS registry `ADDRESS`", Value: ens.DefaultRegistryHex},
	}
}
