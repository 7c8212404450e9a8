package runtime

import (
	"crypto/ed25519"

	"github.com/agentstate/agentstate/refs/receipt"
)

// Receipt is the signed statement of one task landing (see refs/receipt,
// which reads and verifies receipts without the runtime).
type Receipt = receipt.Receipt

// ReceiptVersion is the "v" field of the receipts the runtime writes.
const ReceiptVersion = receipt.Version

// SigningContext prefixes the bytes an operator signs.
const SigningContext = receipt.SigningContext

// MaxReceiptLen bounds one receipt line.
const MaxReceiptLen = receipt.MaxLen

// ParseReceipt decodes one receipt line (receipt.Parse).
func ParseReceipt(line []byte) (*Receipt, error) { return receipt.Parse(line) }

// ParsePublicKey parses an ed25519 public key written as 64 hex digits or
// as standard or URL-safe base64 (receipt.ParsePublicKey).
func ParsePublicKey(s string) (ed25519.PublicKey, error) { return receipt.ParsePublicKey(s) }
