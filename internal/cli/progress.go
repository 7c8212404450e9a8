package cli

import (
	"io"
	"slices"
	"time"

	"github.com/agentstate/agentstate/internal/progress"
	"github.com/schollz/progressbar/v3"
)

// Progress bars: the long operations count their progress on the context
// (internal/progress: the blocks a walk reaches, the bytes a fetch copies
// or a directory import reads) and, on a terminal, the command draws it on
// stderr with github.com/schollz/progressbar (docs/cli.md says why that
// library). Never when stderr is not a terminal, never with --json, never
// in a server running a client's command (its stderr is the client's
// stream); a bar is cleared when the command ends, so what it prints reads
// as without one.

// progressCommands are the commands that draw a bar, with what they count.
var progressCommands = map[string]struct {
	label string
	bytes bool
}{
	"clone": {"clone", true}, "pull": {"pull", true}, "send": {"send", true},
	"commit": {"commit", true}, "import": {"import", true}, "export": {"export", true},
	"verify": {"verify: blocks", false}, "gc": {"gc: blocks", false}, "forget": {"forget: blocks", false},
}

// withProgressBar runs act with a progress reporter in e.ctx drawing a bar
// on stderr, when this command draws one (progressCommands) here.
func (e *env) withProgressBar(act func() error) error {
	pc, ok := progressCommands[e.command]
	if !ok || e.served != nil || !isTerminal(e.stderr) || slices.Contains(e.args, "--json") {
		return act()
	}
	var bar *progressbar.ProgressBar
	max := int64(-2)
	ctx := e.ctx
	e.ctx = progress.With(ctx, func(done, total int64) {
		if bar == nil || total != max {
			if bar != nil {
				bar.Clear()
			}
			max = total
			opts := []progressbar.Option{progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription(pc.label),
				progressbar.OptionThrottle(100 * time.Millisecond), progressbar.OptionClearOnFinish(), progressbar.OptionShowCount()}
			if pc.bytes {
				opts = append(opts, progressbar.OptionShowBytes(true))
			}
			if total < 0 {
				opts = append(opts, progressbar.OptionSpinnerType(14))
			}
			bar = progressbar.NewOptions64(total, opts...)
		}
		bar.Set64(done)
	})
	defer func() {
		e.ctx = ctx
		if bar != nil {
			bar.Finish()
		}
	}()
	return act()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	c *progress.Counter
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.Add(int64(n))
	return n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	c *progress.Counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.c.Add(int64(n))
	return n, err
}
