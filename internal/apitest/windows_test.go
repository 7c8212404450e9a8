package apitest

import (
	"go/ast"
	"go/types"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The windows: the packages that show a repository to people and agents.
// They render the read model (dag/inspect) and do no reading of their own.
var windows = []string{module + "/internal/cli", module + "/internal/mcpserver", module + "/internal/webui"}

// forbidden says why a call is not for a window: it decodes an object,
// reads a value or a tree, or walks the commit graph, all of which are
// the read model's. It returns "" for a call a window may make.
//
// Allowed on purpose: objects.CopyValue (it writes out what the read
// model's View.Open reader gives), objects.ValidateKey and the writers'
// calls (NewFileValue, WriteValue, and a tree's Put and Delete inside
// repo.Edit, for put and rm), and repo.ResolveCommit for the
// commands that hand a commit to the export pipeline (checkout, export,
// hash), which decode nothing themselves.
func forbidden(fn *types.Func) string {
	if fn.Pkg() == nil {
		return ""
	}
	pkg, name := fn.Pkg().Path(), fn.Name()
	recv := ""
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		t := sig.Recv().Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			recv = n.Obj().Name()
		}
	}
	switch pkg {
	case module + "/objects":
		switch {
		case recv == "Tree" && (name == "Put" || name == "Delete"):
			return "" // an edit, inside repo.Edit (put, rm): the owner's write
		case recv == "Tree" || recv == "TreeRanges" || recv == "NodeCache":
			return "reads or walks a tree"
		case recv == "" && strings.HasPrefix(name, "Decode"):
			return "decodes an object"
		case recv == "" && slices.Contains([]string{"LoadTree", "NewTree", "NewTreeRanges", "DiffTrees", "TreeBundleHash",
			"CheckTreeNode", "CheckChunkNode", "NodeLinks", "ChunkLinks"}, name):
			return "reads or walks a tree"
		case recv == "" && slices.Contains([]string{"ReadValue", "ReadValueMax", "ReadContent", "OpenValue", "ContentSize",
			"ContentSHA256", "CheckValue"}, name):
			return "reads a value"
		}
	case module + "/dag":
		if recv == "" && slices.Contains([]string{"Log", "LogWith", "Diff", "Walk", "EntryTouchesKey", "TouchesKey",
			"ReadCommit", "IsAncestor", "MergeBase"}, name) {
			return "walks or reads the commit graph"
		}
	case module + "/dag/repo":
		if recv == "Repo" && slices.Contains([]string{"Tree", "Commit", "HeadCommit"}, name) {
			return "hands out a decoded commit or a tree to walk"
		}
	}
	return ""
}

// calls lists, for each package, the forbidden functions and methods its
// non-test files use, as "file:line: name (why)".
func calls(t *testing.T, paths ...string) map[string][]string {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports |
		packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo, Dir: "../.."}, paths...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors)
		}
		if !slices.Contains(paths, p.PkgPath) {
			continue
		}
		out[p.PkgPath] = []string{}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					return true
				}
				fn, ok := p.TypesInfo.Uses[id].(*types.Func)
				if !ok {
					return true
				}
				if why := forbidden(fn); why != "" {
					pos := p.Fset.Position(id.Pos())
					out[p.PkgPath] = append(out[p.PkgPath], pos.String()+": "+fn.FullName()+" ("+why+")")
				}
				return true
			})
		}
		if _, ok := p.Imports[module+"/dag/inspect"]; !ok && p.PkgPath != module+"/dag/inspect" {
			out[p.PkgPath] = append(out[p.PkgPath], "does not import the read model, dag/inspect")
		}
	}
	return out
}

// The CLI, the MCP server and the page decode no object, read no value or
// tree and walk no history: every read question is the read model's, so
// the three cannot drift apart again. The check is of the type-checked
// calls, so an alias or a method value does not slip past it; that it
// finds what it looks for is checked on the read model itself, which must
// make such calls.
func TestWindowsOnlyRenderTheReadModel(t *testing.T) {
	found := calls(t, append([]string{module + "/dag/inspect"}, windows...)...)
	if len(found[module+"/dag/inspect"]) < 5 {
		t.Fatalf("the check finds only %v in dag/inspect, which reads trees and walks history", found[module+"/dag/inspect"])
	}
	for _, w := range windows {
		got, ok := found[w]
		if !ok {
			t.Fatalf("%s was not loaded", w)
		}
		sort.Strings(got)
		for _, f := range got {
			t.Errorf("%s: %s", w, f)
		}
	}
}
