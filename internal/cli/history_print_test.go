package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/export/history"
)

// push --history reports one pack, or the run of packs a split push added.
func TestPrintHistoryPushed(t *testing.T) {
	var out bytes.Buffer
	e := &env{stdout: &out}
	signer := strings.Repeat("ab", 32)
	e.printHistoryPushed(&historyPushed{Manifest: "M", Pointer: "P", Head: strings.Repeat("c", 59), Packs: 3, Added: 1, Blocks: 9,
		Pack: &history.Pack{Blob: "B3", Blocks: 9, Receipts: &history.ReceiptBlob{Lines: 2}}, Signer: signer})
	e.printHistoryPushed(&historyPushed{Manifest: "M", Pointer: "P", Head: strings.Repeat("c", 59), Packs: 7, Added: 5, Blocks: 120,
		Pack: &history.Pack{Blob: "B7", Blocks: 30}, Signer: signer})
	want := "history: pack 3 of 9 blocks and 2 receipts as blob B3; manifest signed by abababababababab…\n" +
		"history pointer: P = M\n" +
		"history: packs 3–7 (5 packs: the new history is larger than one pack takes) of 120 blocks and 0 receipts, the last as blob B7; manifest signed by abababababababab…\n" +
		"history pointer: P = M\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
