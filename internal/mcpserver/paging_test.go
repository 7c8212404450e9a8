package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// skills fills skills/ with 40 text values of 30,000 bytes (1.2 MB in all,
// as the skills folder whose read_subtree once came back as 1.02 MB in one
// answer) and one 300,000-byte binary value.
func skills(t *testing.T, cs *sdk.ClientSession) (keys []string, big []byte) {
	t.Helper()
	for i := range 40 {
		k := fmt.Sprintf("skills/s%02d.md", i)
		if res, _ := call(t, cs, "put", map[string]any{"key": k, "value": strings.Repeat(fmt.Sprintf("skill %d\n", i), 30000/8)[:30000]}); res.IsError {
			t.Fatal(text(res))
		}
		keys = append(keys, k)
	}
	big = bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 30000)
	if res, _ := call(t, cs, "put", map[string]any{"key": "skills/big.bin", "base64": base64.StdEncoding.EncodeToString(big)}); res.IsError {
		t.Fatal(text(res))
	}
	keys = append([]string{"skills/big.bin"}, keys...)
	keys = append(keys, "skills/x.md") // the store's own
	return keys, big
}

// read_subtree answers in pages of at most MaxSubtree bytes of values, with
// a cursor that continues at the same commit; a bad cursor is a clean error.
func TestReadSubtreePages(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	keys, _ := skills(t, cs)

	var got []string
	var commit any
	cursor, pages := "", 0
	for {
		args := map[string]any{"prefix": "skills/"}
		if cursor != "" {
			args["cursor"] = cursor
		}
		res, out := call(t, cs, "read_subtree", args)
		if res.IsError {
			t.Fatalf("page %d: %s", pages+1, text(res))
		}
		pages++
		if pages == 1 {
			commit = out["commit"]
			// A write between pages changes nothing the pages read.
			call(t, cs, "put", map[string]any{"key": "skills/s05.md", "value": "changed"})
			call(t, cs, "put", map[string]any{"key": "skills/s05a.md", "value": "new"})
		} else if out["commit"] != commit {
			t.Fatalf("page %d read commit %v, the first %v", pages, out["commit"], commit)
		}
		inline := 0
		for _, x := range out["values"].([]any) {
			val := x.(map[string]any)
			got = append(got, val["key"].(string))
			switch {
			case val["text"] != nil:
				inline += len(val["text"].(string))
				if val["key"] == "skills/s05.md" && val["text"] == "changed" {
					t.Fatal("a later page read the value written after the first")
				}
			case val["base64"] != nil:
				inline += base64.StdEncoding.DecodedLen(len(val["base64"].(string)))
			case val["key"] == "skills/big.bin":
				if val["size"] != float64(300000) || !strings.Contains(val["omitted"].(string), "get (offset, length)") {
					t.Fatalf("big.bin: %v", val)
				}
			default:
				t.Fatalf("a value with neither text, base64 nor omitted: %v", val)
			}
		}
		if inline > mcpserver.MaxSubtree {
			t.Fatalf("page %d carried %d bytes of values, over %d", pages, inline, mcpserver.MaxSubtree)
		}
		b, _ := json.Marshal(res.StructuredContent)
		t.Logf("page %d: %d values, %d bytes of structured content", pages, len(out["values"].([]any)), len(b))
		c, _ := out["cursor"].(string)
		if (c != "") != (out["more"] == true) {
			t.Fatalf("cursor %q, more %v", c, out["more"])
		}
		if c == "" {
			break
		}
		cursor = c
	}
	if strings.Join(got, " ") != strings.Join(keys, " ") {
		t.Fatalf("the pages gave %v, want %v", got, keys)
	}
	if pages < 5 {
		t.Fatalf("1.2 MB of values in %d pages", pages)
	}

	// Another store's cursor, a forged one, one for another prefix.
	other := connect(t, mcpserver.NewServer(store(t), mcpserver.Options{Agent: "lumen"}))
	call(t, other, "put", map[string]any{"key": "skills/a.md", "value": "other store"})
	call(t, other, "put", map[string]any{"key": "skills/b.md", "value": strings.Repeat("b", 300000)[:200000]})
	call(t, other, "put", map[string]any{"key": "skills/c.md", "value": strings.Repeat("c", 200000)})
	_, out := call(t, other, "read_subtree", map[string]any{"prefix": "skills/"})
	foreign, _ := out["cursor"].(string)
	if foreign == "" {
		t.Fatalf("the other store's first page has no cursor: %v", out)
	}
	for name, c := range map[string]struct{ cursor, prefix, want string }{
		"another store's": {foreign, "skills/", "not in this store"},
		"forged":          {"bm90IGEgY3Vyc29y", "skills/", "invalid cursor"},
		"not base64":      {"%%%", "skills/", "invalid cursor"},
		"another prefix":  {cursor, "memory/", "continues prefix"},
	} {
		res, _ := call(t, cs, "read_subtree", map[string]any{"prefix": c.prefix, "cursor": c.cursor})
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s cursor: %v %q, want an error saying %q", name, res.IsError, text(res), c.want)
		}
	}
}

// A value over the resource limit is a JSON-RPC error -32602 that says its
// size and how to read it; get reads it in ranges.
func TestOversizedRead(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	_, big := skills(t, cs)
	_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "agentstate://lumen/HEAD/skills/big.bin"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "300000 bytes") || !strings.Contains(je.Message, "get tool") {
		t.Fatalf("oversized resource read: %v", err)
	}
	var data map[string]any
	if json.Unmarshal(je.Data, &data) != nil || data["size"] != float64(300000) || data["limit"] != float64(mcpserver.MaxInline) {
		t.Fatalf("error data %s", je.Data)
	}
	// Read whole in ranges.
	var got []byte
	for off := 0; off < len(big); {
		_, out := call(t, cs, "get", map[string]any{"key": "skills/big.bin", "offset": off, "length": mcpserver.MaxInline})
		b, err := base64.StdEncoding.DecodeString(out["base64"].(string))
		if err != nil || out["size"] != float64(len(big)) || out["offset"] != float64(off) || out["length"] != float64(len(b)) {
			t.Fatalf("range at %d: %v", off, out)
		}
		got = append(got, b...)
		off += len(b)
	}
	if !bytes.Equal(got, big) {
		t.Fatal("the ranges do not make the value")
	}
	// A range of text is text.
	if res, out := call(t, cs, "get", map[string]any{"key": "skills/s01.md", "offset": 8, "length": 8}); res.IsError || out["text"] != "skill 1\n" || out["offset"] != float64(8) {
		t.Fatalf("text range: %v", out)
	}
	for _, args := range []map[string]any{
		{"key": "skills/big.bin", "offset": 300001, "length": 1},
		{"key": "skills/big.bin", "offset": -1, "length": 1},
		{"key": "skills/big.bin", "length": mcpserver.MaxInline + 1},
	} {
		if res, _ := call(t, cs, "get", args); !res.IsError {
			t.Errorf("get %v: no error", args)
		}
	}
}

// Errors name MCP tools, never CLI commands.
func TestErrorsNameTools(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	for name, args := range map[string]map[string]any{
		"log": {"agent": "nobody"}, "get": {"agent": "nobody", "key": "x"}, "read_subtree": {"agent": "nobody"},
		"task": {"agent": "nobody"}, "show": {"agent": "nobody"},
	} {
		res, _ := call(t, cs, name, args)
		if msg := text(res); !res.IsError || !strings.Contains(msg, "list_agents") || strings.Contains(msg, "agentstate ") {
			t.Errorf("%s for an unknown agent: %q", name, msg)
		}
	}
}

// "Resource not found" has the code of the session's protocol version:
// -32002 up to 2025-11-25, the SDK's -32602 after.
func TestResourceNotFoundCode(t *testing.T) {
	v := store(t)
	for version, want := range map[string]int64{"2025-06-18": -32002, "2025-11-25": -32002, "": jsonrpc.CodeInvalidParams} {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}).Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"agentstate://lumen/HEAD/nope", "agentstate://nobody/HEAD/x", "test://x"} {
			_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: u})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != want {
				t.Errorf("%q: read %s: %v, want code %d", version, u, err, want)
			}
		}
		// A read too large stays -32602 (invalid params) in every version.
		call(t, cs, "put", map[string]any{"key": "big", "value": strings.Repeat("x", mcpserver.MaxInline+1)})
		_, err = cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "agentstate://lumen/HEAD/big"})
		if rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("%q: an oversized read: %v", version, err)
		}
		cs.Close()
	}
}
