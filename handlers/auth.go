package handlers

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/auth"
	"wager/domain/flags"
	"wager/web"
)

// authHandlers serve signing in and out, by API and by page.
type authHandlers struct {
	auth          *auth.Service
	flags         *flags.Service
	embeddedChain bool
	publicURL     string
	chrome        *chrome
}

// routes registers signing in and out. The sign-in routes are open to
// admin wallets during maintenance (the handlers check).
func (h *authHandlers) routes(r *router) {
	r.signIn(http.MethodPost, "/auth/handshake", h.handshake, web.Op{Tag: "auth",
		Summary: "Get a sign-in message for a wallet", Request: HandshakeRequest{}, Response: HandshakeResponse{},
		Description: "Header X-App-Id is required. The message is single-use and expires after 5 minutes; any unexpired, unused challenge of the wallet can be signed. " +
			"At most 10 a minute for one wallet from one client address (asking in someone else's name uses up nothing of theirs) and AUTH_RATE_LIMIT (120) a minute per client address: past either, 429 RATE_LIMITED with Retry-After.",
		Errors: []int{http.StatusTooManyRequests}})
	r.signIn(http.MethodPost, "/auth/login-wallet", h.loginWallet, web.Op{Tag: "auth",
		Summary: "Sign in with the wallet's signature of the message", Request: LoginRequest{}, Response: LoginResponse{},
		Description: "Header X-App-Id is required. Any failure is 401 UNAUTHORIZED.", Errors: []int{http.StatusUnauthorized}})

	r.json(http.MethodPost, "/auth/logout", h.logoutToken, web.Op{Tag: "auth", Auth: web.AuthRequired, Status: http.StatusNoContent,
		Summary:     "Sign the access token out",
		Description: "Every instance refuses the token from then on (401)."})
	r.signIn(http.MethodPost, "/session", h.createSession, web.Op{Tag: "auth",
		Summary: "Browser sign-in: like /auth/login-wallet for app id \"web\", answered with a session cookie",
		Request: LoginRequest{}, Response: SessionAnswer{}, Errors: []int{http.StatusUnauthorized, http.StatusForbidden}})
}

// HandshakeRequest is the body of POST /auth/handshake.
type HandshakeRequest struct {
	WalletAddress string `json:"walletAddress" doc:"base58 Solana address"`
}

// HandshakeResponse is the challenge to sign.
type HandshakeResponse struct {
	Message   string    `json:"message" doc:"Sign-In-With-Solana style text; sign its UTF-8 bytes"`
	Nonce     string    `json:"nonce"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (h *authHandlers) handshake(c echo.Context) error {
	var req HandshakeRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.WalletAddress); err != nil {
		return err
	}
	ch, err := h.auth.Handshake(c.Request().Context(), req.WalletAddress, c.Request().Header.Get("X-App-Id"), c.RealIP())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, HandshakeResponse{Message: ch.Message, Nonce: ch.Nonce, ExpiresAt: ch.ExpiresAt})
}

// LoginRequest is the body of POST /auth/login-wallet.
type LoginRequest struct {
	SignedMessage string `json:"signedMessage" doc:"base64 of the detached ed25519 signature over the message bytes"`
	Address       string `json:"address" doc:"base58 Solana address that signed"`
	Nonce         string `json:"nonce,omitempty" doc:"the nonce of the challenge signed; without it, any unexpired, unused challenge of the wallet may be the one"`
	ReferralCode  string `json:"referralCode,omitempty" doc:"the code of the user who referred you; read at your first login only, and ignored when no user has it"`
}

// LoginResponse carries the access token and the signed-in user.
type LoginResponse struct {
	AccessToken string      `json:"access_token"`
	TokenType   string      `json:"token_type" doc:"Bearer"`
	ExpiresIn   int         `json:"expires_in" doc:"seconds"`
	User        UserProfile `json:"user"`
}

func (h *authHandlers) loginWallet(c echo.Context) error {
	var req LoginRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.Address); err != nil {
		return err
	}
	appID := c.Request().Header.Get("X-App-Id")
	u, err := h.auth.Login(c.Request().Context(), auth.SignIn{Address: req.Address, Signature: req.SignedMessage, AppID: appID,
		Nonce: req.Nonce, ReferralCode: req.ReferralCode, ClientIP: c.RealIP()})
	if err != nil {
		return err
	}
	token, err := h.auth.Tokens.Issue(u.ID, appID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, LoginResponse{AccessToken: token, TokenType: "Bearer",
		ExpiresIn: int(auth.TokenLifetime.Seconds()), User: profileOf(u)})
}

// logoutToken signs the bearer token out: every instance refuses it from
// now on.
func (h *authHandlers) logoutToken(c echo.Context) error {
	token, _ := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	if err := h.auth.Logout(c.Request().Context(), strings.TrimSpace(token)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// refuseDuringMaintenance lets only admin wallets sign in while the
// platform is in maintenance, so that an admin can always get in to turn
// it off.
func (h *authHandlers) refuseDuringMaintenance(wallet string) error {
	if h.flags.Enabled(flags.Maintenance) && !h.auth.IsAdmin(wallet) {
		return domain.Errorf(domain.CodeMaintenance, "The service is down for maintenance, and only administrators can sign in. Please try again in a few minutes.").
			With("retryAfterSeconds", int(maintenanceRetry.Seconds()))
	}
	return nil
}
