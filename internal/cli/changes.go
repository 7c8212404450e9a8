package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/internal/textdiff"
	"github.com/agentstate/agentstate/objects"
)

var changeLetter = map[objects.ChangeKind]string{objects.Added: "A", objects.Removed: "D", objects.Modified: "M"}

var changeColor = map[objects.ChangeKind]string{objects.Added: "32", objects.Removed: "31", objects.Modified: "36"}

func (e *env) printChanges(changes []objects.Change) {
	for _, ch := range changes {
		fmt.Fprintf(e.stdout, "%s\t%s\n", e.paint(changeColor[ch.Change], changeLetter[ch.Change]), termsafe.Line(ch.Path))
	}
}

// maxPatchValue bounds the values whose line diff is shown.
const maxPatchValue = 1 << 20

// printPatch prints a unified diff per changed text value.
func (e *env) printPatch(r *repo.Repo, changes []objects.Change) error {
	// A value over maxPatchValue is not read: its size comes from its file
	// node, and it is reported as large.
	read := func(v objects.CID) ([]byte, uint64, error) {
		if v.IsZero() {
			return nil, 0, nil
		}
		data, err := objects.ReadValueMax(e.ctx, r.Blocks, v, maxPatchValue)
		var tl *objects.ValueTooLargeError
		if errors.As(err, &tl) {
			return nil, tl.Size, nil
		}
		return data, uint64(len(data)), err
	}
	for _, ch := range changes {
		a, na, err := read(ch.Old)
		if err != nil {
			return err
		}
		b, nb, err := read(ch.New)
		if err != nil {
			return err
		}
		path := termsafe.Line(ch.Path)
		fmt.Fprintln(e.stdout, e.paint("1", "diff a/"+path+" b/"+path))
		oldName, newName := "a/"+path, "b/"+path
		switch ch.Change {
		case objects.Added:
			oldName = "/dev/null"
		case objects.Removed:
			newName = "/dev/null"
		}
		if na > maxPatchValue || nb > maxPatchValue || !textdiff.IsText(a) || !textdiff.IsText(b) {
			fmt.Fprintf(e.stdout, "Binary or large values differ (%d -> %d bytes)\n", na, nb)
			continue
		}
		for _, line := range strings.SplitAfter(textdiff.Unified(oldName, newName, string(a), string(b), 3), "\n") {
			switch {
			case strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++"):
				line = e.paint("32", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---"):
				line = e.paint("31", strings.TrimSuffix(line, "\n")) + "\n"
			case strings.HasPrefix(line, "@@"):
				line = e.paint("36", strings.TrimSuffix(line, "\n")) + "\n"
			}
			fmt.Fprint(e.stdout, line)
		}
	}
	return nil
}
