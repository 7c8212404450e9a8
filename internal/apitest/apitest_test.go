// Package apitest holds tests of the project's public API as a whole.
package apitest

import (
	"go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/agentstate/agentstate"

// No public package names an internal package's type in what it exports:
// an embedder must be able to name every type a public function takes or
// returns, every field of an exported struct, every method's signature.
func TestNoPublicPackageExposesAnInternalType(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports | packages.NeedDeps, Dir: "../.."}, module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	public := 0
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			t.Fatalf("%s: %v", p.PkgPath, p.Errors)
		}
		if isInternal(p.PkgPath) || p.Name == "main" {
			continue
		}
		public++
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			c := checker{seen: map[types.Type]bool{}}
			c.object(obj)
			for _, via := range c.found {
				found = append(found, p.PkgPath+"."+name+": "+via)
			}
		}
	}
	if public < 20 {
		t.Fatalf("only %d public packages loaded", public)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Errorf("exposes an internal type: %s", f)
	}
}

func isInternal(path string) bool {
	return strings.Contains(path+"/", "/internal/")
}

type checker struct {
	seen  map[types.Type]bool
	found []string
}

func (c *checker) object(obj types.Object) {
	switch o := obj.(type) {
	case *types.TypeName:
		if o.IsAlias() {
			c.typ(types.Unalias(o.Type()))
			return
		}
		named, ok := o.Type().(*types.Named)
		if !ok {
			return
		}
		c.underlying(named.Underlying())
		for m := range named.Methods() {
			if m.Exported() {
				c.typ(m.Type())
			}
		}
	default:
		c.typ(obj.Type())
	}
}

// underlying checks a declared type's structure: exported fields and
// interface methods (unexported ones are not part of the API).
func (c *checker) underlying(u types.Type) {
	switch u := u.(type) {
	case *types.Struct:
		for f := range u.Fields() {
			if f.Exported() {
				c.typ(f.Type())
			}
		}
	case *types.Interface:
		for m := range u.Methods() {
			if m.Exported() {
				c.typ(m.Type())
			}
		}
	default:
		c.typ(u)
	}
}

func (c *checker) typ(t types.Type) {
	t = types.Unalias(t)
	if t == nil || c.seen[t] {
		return
	}
	c.seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if pkg := t.Obj().Pkg(); pkg != nil && isInternal(pkg.Path()) {
			c.found = append(c.found, pkg.Path()+"."+t.Obj().Name())
			return
		}
		for a := range t.TypeArgs().Types() {
			c.typ(a)
		}
	case *types.Pointer:
		c.typ(t.Elem())
	case *types.Slice:
		c.typ(t.Elem())
	case *types.Array:
		c.typ(t.Elem())
	case *types.Map:
		c.typ(t.Key())
		c.typ(t.Elem())
	case *types.Chan:
		c.typ(t.Elem())
	case *types.Signature:
		for v := range t.Params().Variables() {
			c.typ(v.Type())
		}
		for v := range t.Results().Variables() {
			c.typ(v.Type())
		}
	case *types.Struct, *types.Interface:
		c.underlying(t)
	}
}
