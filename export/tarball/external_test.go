package tarball

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// External tools: GNU tar and bsdtar must list the projection with mode,
// owner 0/0 and mtime 0, and extract it to exactly the input files. A
// missing tool skips only its own subtest.

func lookTool(t *testing.T, name, versionMark string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian: tar / libarchive-tools); this sub-check is skipped", name)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), versionMark) {
		t.Skipf("%s is not %s: %s", p, versionMark, out)
	}
	return p
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "TZ=UTC", "LC_ALL=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Fatalf("%s %q warned: %s", name, args, stderr.String())
	}
	return string(out)
}

// externalFiles adds deeper nesting and a 200-byte name to the golden list.
var externalFiles = sorted(append(slices.Clone(goldenFiles),
	kv{"skills/deep/er/x.md", "x"},
	kv{strings.Repeat("n", 200), "200-byte name"},
	kv{"memory.db", "SQLite format 3\x00" + strings.Repeat("\x01\x00", 4000)},
))

// wantEntries lists the projection's entries as "mode name" lines.
func wantEntries(files []kv) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		for i := range len(f.path) {
			if d := f.path[:i+1]; f.path[i] == '/' && !seen[d] {
				seen[d] = true
				out = append(out, "drwxr-xr-x 0 "+d)
			}
		}
		out = append(out, fmt.Sprintf("-rw-r--r-- %d %s", len(f.content), f.path))
	}
	return out
}

func writeTemp(t *testing.T, files []kv) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "brain.tar")
	if err := os.WriteFile(p, mustWrite(t, files), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGNUTar(t *testing.T) {
	tarBin := lookTool(t, "tar", "GNU tar")
	archive := writeTemp(t, externalFiles)
	var got []string
	for line := range strings.Lines(run(t, tarBin, "--numeric-owner", "--full-time", "-tvf", archive)) {
		// -rw-r--r-- 0/0   43 1970-01-01 00:00:00 MEMORY.md
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("unexpected listing line %q", line)
		}
		if f[1] != "0/0" || f[3] != "1970-01-01" || f[4] != "00:00:00" {
			t.Errorf("owner/time not zero: %q", line)
		}
		name := strings.TrimSuffix(strings.SplitN(line, " 00:00:00 ", 2)[1], "\n")
		got = append(got, f[0]+" "+f[2]+" "+name)
	}
	if want := wantEntries(externalFiles); !slices.Equal(got, want) {
		t.Errorf("GNU tar lists\n%q\nwant\n%q", got, want)
	}
	dir := t.TempDir()
	run(t, tarBin, "-xf", archive, "-C", dir)
	checkExtracted(t, dir, externalFiles)
}

func TestBSDTar(t *testing.T) {
	bsdtar := lookTool(t, "bsdtar", "libarchive")
	archive := writeTemp(t, externalFiles)
	var got []string
	for line := range strings.Lines(run(t, bsdtar, "--numeric-owner", "-tvf", archive)) {
		// -rw-r--r--  0 0      0          43 Jan  1  1970 MEMORY.md
		f := strings.Fields(line)
		if len(f) < 9 {
			t.Fatalf("unexpected listing line %q", line)
		}
		if f[2] != "0" || f[3] != "0" || f[5] != "Jan" || f[6] != "1" || f[7] != "1970" {
			t.Errorf("owner/time not zero: %q", line)
		}
		name := strings.TrimSuffix(strings.SplitN(line, " 1970 ", 2)[1], "\n")
		got = append(got, f[0]+" "+f[4]+" "+name)
	}
	if want := wantEntries(externalFiles); !slices.Equal(got, want) {
		t.Errorf("bsdtar lists\n%q\nwant\n%q", got, want)
	}
	dir := t.TempDir()
	run(t, bsdtar, "-xf", archive, "-C", dir)
	checkExtracted(t, dir, externalFiles)
}

// checkExtracted compares an extracted directory with files: same regular
// files, same contents, modes 0644/0755, mtime 0, nothing else.
func checkExtracted(t *testing.T, dir string, files []kv) {
	t.Helper()
	var got []kv
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if rel != "." && info.ModTime().Unix() != 0 {
			t.Errorf("%s: mtime %v, want the epoch", rel, info.ModTime())
		}
		switch {
		case d.IsDir():
			if rel != "." && info.Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v, want 0755", rel, info.Mode())
			}
		case info.Mode().IsRegular():
			if info.Mode().Perm() != 0o644 {
				t.Errorf("%s: mode %v, want 0644", rel, info.Mode())
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got = append(got, kv{filepath.ToSlash(rel), string(b)})
		default:
			t.Errorf("%s: unexpected %v", rel, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got = sorted(got)
	if fmt.Sprint(got) != fmt.Sprint(files) {
		t.Errorf("extracted %d files, want %d", len(got), len(files))
	}
}

// TestReadGNUTarArchives reads archives GNU tar made from a directory, in
// each of its formats, as a user importing a brain would.
func TestReadGNUTarArchives(t *testing.T) {
	tarBin := lookTool(t, "tar", "GNU tar")
	src := t.TempDir()
	files := sorted([]kv{{"MEMORY.md", "m"}, {"skills/a.md", "a"}, {strings.Repeat("d", 120) + "/" + strings.Repeat("f", 120), "long"}})
	for _, f := range files {
		p := filepath.Join(src, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, format := range []string{"gnu", "posix", "ustar"} {
		t.Run(format, func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "x.tar")
			args := []string{"--format=" + format, "-C", src, "-cf", archive, "."}
			if format == "ustar" { // USTAR cannot hold the 241-byte name
				args = []string{"--format=ustar", "-C", src, "-cf", archive, "MEMORY.md", "skills"}
			}
			run(t, tarBin, args...)
			data, err := os.ReadFile(archive)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := readAll(data, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := files
			if format == "ustar" {
				want = []kv{files[0], files[2]}
			}
			if got = sorted(got); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// TestReadGNUSparseAndSymlink: sparse files (both GNU encodings) and
// symlinks from a real directory are refused, or skipped on request.
func TestReadGNUSparseAndSymlink(t *testing.T) {
	tarBin := lookTool(t, "tar", "GNU tar")
	src := t.TempDir()
	sparse, err := os.Create(filepath.Join(src, "b-sparse.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sparse.WriteAt([]byte("tail"), 1<<20); err != nil {
		t.Fatal(err)
	}
	sparse.Close()
	if err := os.WriteFile(filepath.Join(src, "a.md"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "z.md"), []byte("z"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.md", filepath.Join(src, "c-link")); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"gnu", "posix"} {
		t.Run(format, func(t *testing.T) {
			archive := filepath.Join(t.TempDir(), "x.tar")
			run(t, tarBin, "--format="+format, "--sparse", "-C", src, "-cf", archive, "a.md", "b-sparse.db", "c-link", "z.md")
			data, err := os.ReadFile(archive)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = readAll(data, ReadOptions{})
			var ee *EntryError
			if !errors.Is(err, ErrUnsupportedEntry) || !errors.As(err, &ee) || ee.Type != 'S' {
				t.Fatalf("err = %v, want ErrUnsupportedEntry for the sparse file", err)
			}
			got, rep, err := readAll(data, ReadOptions{SkipUnsupported: true})
			if err != nil {
				t.Fatal(err)
			}
			if want := []kv{{"a.md", "a"}, {"z.md", "z"}}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("got %q, want %q", got, want)
			}
			if want := []Skipped{{"b-sparse.db", 'S'}, {"c-link", '2'}}; fmt.Sprint(rep.Skipped) != fmt.Sprint(want) {
				t.Fatalf("skipped %v, want %v", rep.Skipped, want)
			}
		})
	}
}

// TestGNUTarReproduces: for a brain whose names all fit USTAR headers, GNU
// tar given the entry list in projection order writes the same bytes
// (docs/tar.md gives the command), so the format is not a Go artefact.
func TestGNUTarReproduces(t *testing.T) {
	tarBin := lookTool(t, "tar", "GNU tar")
	files := sorted([]kv{
		{"MEMORY.md", "# Memory\n"}, {"a.txt", ""}, {"a/b/c.txt", "c\n"}, {"a-b", strings.Repeat("x", 1000)},
		{strings.Repeat("p", 60) + "/" + strings.Repeat("q", 60) + "/" + strings.Repeat("r", 90), "split into prefix and name"},
		{"skills/" + strings.Repeat("s", 93), "exactly 100 bytes"},
	})
	src := t.TempDir()
	var entries []string
	for _, e := range wantEntries(files) {
		entries = append(entries, strings.SplitN(e, " ", 3)[2])
	}
	for _, f := range files {
		p := filepath.Join(src, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(t.TempDir(), "gnu.tar")
	args := append([]string{"--format=ustar", "--numeric-owner", "--owner=0", "--group=0", "--mtime=@0",
		"--mode=u=rw,go=r,a+X", "--no-recursion", "-b1", "-C", src, "-cf", archive}, entries...)
	run(t, tarBin, args...)
	got, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustWrite(t, files); !bytes.Equal(got, want) {
		t.Fatalf("GNU tar wrote %d bytes, projection is %d; first difference at byte %d", len(got), len(want), firstDiff(got, want))
	}
}
