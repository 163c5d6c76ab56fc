package localchain

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// The runtime's lines around each instruction of a transaction, as a
// validator writes them into its log messages. Programs loaded as BPF
// programs also get a consumed line; builtin programs (ComputeBudget,
// System) only invoke and success. Every instruction here runs at the top
// level: the depth is always 1.
func invokeLog(program solana.PublicKey) string { return "Program " + program.String() + " invoke [1]" }

func successLog(program solana.PublicKey) string { return "Program " + program.String() + " success" }

func consumedLog(program solana.PublicKey, used, left uint64) string {
	return fmt.Sprintf("Program %s consumed %d of %d compute units", program, used, left)
}

// isBuiltin reports whether program is one of the runtime's builtin
// programs the chain runs: they log no consumed line and reserve only
// builtinUnitsPerInstruction of the default compute budget.
func isBuiltin(program solana.PublicKey) bool {
	return program.Equals(chain.ComputeBudgetProgramID) || program.Equals(chain.SystemProgramID)
}

// memoLogs are the lines the SPL Memo program (v3, at
// MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr on every cluster) logs for a
// memo: one "Signed by <address>" per signer account, then the memo's
// length in bytes and its text as Rust's Debug form of a string.
func memoLogs(signers []solana.PublicKey, memo string) []string {
	logs := make([]string, 0, len(signers)+1)
	for _, s := range signers {
		logs = append(logs, "Program log: Signed by "+s.String())
	}
	return append(logs, fmt.Sprintf("Program log: Memo (len %d): %s", len(memo), rustDebugString(memo)))
}

// rustDebugString is s as the deployed Memo program formats a string with
// {:?}: in double quotes, with \t \r \n \\ \" and \' escaped, and every
// other character that is not printable, or that extends a grapheme (a
// combining mark), as \u{hex}. The program was built with a Rust of 2021,
// which wrote NUL as \u{0} and escaped single quotes; today's Rust writes
// \0 and leaves ' alone. Printable is Go's unicode.IsPrint (letters, marks,
// numbers, punctuation, symbols and the ASCII space), which is Rust's rule;
// but the program's tables are Unicode 12.1, so a character assigned since
// (Unicode 13.0, 2020, or later) is escaped there and written as it is here.
func rustDebugString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\\', r == '"', r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case extendsGrapheme(r) || !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// extendsGrapheme reports Unicode's Grapheme_Extend property: nonspacing
// and enclosing marks and the other characters that join the one before.
func extendsGrapheme(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend)
}
