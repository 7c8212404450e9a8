package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are extra testscript commands.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// jsonlen N: stdout is a JSON array of N elements.
	"jsonlen": func(ts *testscript.TestScript, neg bool, args []string) {
		var v []any
		if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
			ts.Fatalf("stdout is not a JSON array: %v", err)
		}
		if got := fmt.Sprint(len(v)); (got == args[0]) == neg {
			ts.Fatalf("JSON array has %s elements, want %s%s", got, map[bool]string{true: "not ", false: ""}[neg], args[0])
		}
	},
	// setenvfile NAME FILE: set NAME to the trimmed contents of FILE (e.g. stdout).
	"setenvfile": func(ts *testscript.TestScript, neg bool, args []string) {
		ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile(args[1])))
	},
	// samefiles A B: directories A and B hold the same regular files.
	"samefiles": func(ts *testscript.TestScript, neg bool, args []string) {
		a, b := ts.MkAbs(args[0]), ts.MkAbs(args[1])
		la, lb := listTree(ts, a), listTree(ts, b)
		if (la == lb) == neg {
			ts.Fatalf("directories %s and %s: same=%v\n%s\n---\n%s", args[0], args[1], la == lb, la, lb)
		}
	},
}

func listTree(ts *testscript.TestScript, root string) string {
	var buf bytes.Buffer
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			ts.Fatalf("%v", err)
		}
		rel, _ := filepath.Rel(root, p)
		if info.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&buf, "%s %q\n", rel, data)
		}
		return nil
	})
	return buf.String()
}
