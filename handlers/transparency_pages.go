package handlers

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager.example.com/sdk/anchor"
	"wager/domain"
	"wager/domain/anchors"
	"wager/domain/gamelog"
	"wager/domain/money"
	"wager/domain/reserves"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// transparencyPages serve the public page of the log of games, its
// anchors and the proof of reserves.
type transparencyPages struct {
	log       *gamelog.Log
	reserves  *reserves.Service
	anchors   *anchors.Service
	explorer  livepage.Explorer
	publicURL string
	header    *header.Header
}

func (h *transparencyPages) transparencyPage(c echo.Context) error {
	ctx := c.Request().Context()
	t, err := h.log.Tree(ctx)
	if err != nil {
		return err
	}
	cp, err := h.log.Checkpoint(t)
	if err != nil {
		return err
	}
	v := views.TransparencyView{Origin: h.log.Origin(), Key: h.log.VerifierKey(), Size: t.N, Root: base64.StdEncoding.EncodeToString(t.Hash[:]),
		Checkpoint: string(cp), SignedIn: web.IdentityOf(c) != nil, URL: h.publicURL}
	list, err := h.anchors.Landed(ctx, 20)
	if err != nil {
		return err
	}
	for _, a := range list {
		v.Anchors = append(v.Anchors, views.AnchorLine{What: anchorWords(a), At: a.At.UTC().Format("2006-01-02 15:04 UTC"),
			Signature: a.Signature, Link: h.explorer.URL("tx", a.Signature), Slot: a.Slot})
	}
	s, err := h.reserves.Latest(ctx)
	var derr *domain.Error
	switch {
	case errors.As(err, &derr) && derr.Code == domain.CodeNotFound:
	case err != nil:
		return err
	default:
		v.Reserves = &views.ReservesLine{ID: s.SnapshotID, At: s.At.UTC().Format("2006-01-02 15:04 UTC"),
			Liabilities: money.USDC(s.LiabilitiesMinor), Assets: money.USDC(s.AssetsMinor), Ratio: ratio(s.AssetsMinor, s.LiabilitiesMinor),
			Root: base64.StdEncoding.EncodeToString(s.RootHash), Users: s.Users, Slot: s.Slot, Covered: s.Shortfall() == 0}
	}
	return web.Render(c, http.StatusOK, views.TransparencyPage(h.header.Page(c, "Transparency"), v))
}

// anchorWords says what an anchor anchors.
func anchorWords(a anchor.Anchor) string {
	if a.Kind == anchor.Reserves && a.SnapshotID != nil {
		return "Proof of reserves " + *a.SnapshotID
	}
	if a.Size != nil {
		return "The log at " + strconv.FormatInt(*a.Size, 10) + " games"
	}
	return a.Memo
}

// ratio is assets over liabilities as a percentage ("—" when nothing is
// owed).
func ratio(assets, liabilities int64) string {
	if liabilities == 0 {
		return "nothing owed"
	}
	return fmt.Sprintf("%.2f %%", float64(assets)*100/float64(liabilities))
}
