package api

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

// Auth serves signing in and out.
type Auth struct {
	Auth      *auth.Service
	Flags     *flags.Service
	PublicURL string
}

// Routes registers signing in and out. The sign-in routes are open to
// admin wallets during maintenance (the handlers check).
func (h *Auth) Routes(r Router) {
	r.SignIn(http.MethodPost, "/auth/handshake", h.handshake, web.Op{Tag: "auth",
		Summary: "Get a sign-in message for a wallet", Request: HandshakeRequest{}, Response: HandshakeResponse{},
		Description: "Header X-App-Id is required. The message is single-use and expires after 5 minutes; any unexpired, unused challenge of the wallet can be signed. " +
			"At most 10 a minute for one wallet from one client address (asking in someone else's name uses up nothing of theirs) and AUTH_RATE_LIMIT (120) a minute per client address: past either, 429 RATE_LIMITED with Retry-After.",
		Errors: []int{http.StatusTooManyRequests}})
	r.SignIn(http.MethodPost, "/auth/login-wallet", h.loginWallet, web.Op{Tag: "auth",
		Summary: "Sign in with the wallet's signature of the message", Request: LoginRequest{}, Response: LoginResponse{},
		Description: "Header X-App-Id is required. Any failure is 401 UNAUTHORIZED.", Errors: []int{http.StatusUnauthorized}})

	r.JSON(http.MethodPost, "/auth/logout", h.logoutToken, web.Op{Tag: "auth", Auth: web.AuthRequired, Status: http.StatusNoContent,
		Summary:     "Sign the access token out",
		Description: "Every instance refuses the token from then on (401)."})
	r.SignIn(http.MethodPost, "/session", h.createSession, web.Op{Tag: "auth",
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

func (h *Auth) handshake(c echo.Context) error {
	var req HandshakeRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.WalletAddress); err != nil {
		return err
	}
	ch, err := h.Auth.Handshake(c.Request().Context(), req.WalletAddress, c.Request().Header.Get("X-App-Id"), c.RealIP())
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

func (h *Auth) loginWallet(c echo.Context) error {
	var req LoginRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.Address); err != nil {
		return err
	}
	appID := c.Request().Header.Get("X-App-Id")
	u, err := h.Auth.Login(c.Request().Context(), auth.SignIn{Address: req.Address, Signature: req.SignedMessage, AppID: appID,
		Nonce: req.Nonce, ReferralCode: req.ReferralCode, ClientIP: c.RealIP()})
	if err != nil {
		return err
	}
	token, err := h.Auth.Tokens.Issue(u.ID, appID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, LoginResponse{AccessToken: token, TokenType: "Bearer",
		ExpiresIn: int(auth.TokenLifetime.Seconds()), User: ProfileOf(u)})
}

// logoutToken signs the bearer token out: every instance refuses it from
// now on.
func (h *Auth) logoutToken(c echo.Context) error {
	token, _ := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
	if err := h.Auth.Logout(c.Request().Context(), strings.TrimSpace(token)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// refuseDuringMaintenance lets only admin wallets sign in while the
// platform is in maintenance, so that an admin can always get in to turn
// it off.
func (h *Auth) refuseDuringMaintenance(wallet string) error {
	if h.Flags.Enabled(flags.Maintenance) && !h.Auth.IsAdmin(wallet) {
		return domain.Errorf(domain.CodeMaintenance, "The service is down for maintenance, and only administrators can sign in. Please try again in a few minutes.").
			With("retryAfterSeconds", int(MaintenanceRetry.Seconds()))
	}
	return nil
}

// createSession is the browser's login: the same signature check as
// POST /auth/login-wallet (app id "web"), answered with a session cookie.
// It is called by the wallet script with JSON and answers JSON.
func (h *Auth) createSession(c echo.Context) error {
	if err := web.CheckSameSiteJSON(c, h.PublicURL); err != nil {
		return err
	}
	var req LoginRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.Address); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.Auth.Login(ctx, auth.SignIn{Address: req.Address, Signature: req.SignedMessage, AppID: "web",
		Nonce: req.Nonce, ReferralCode: req.ReferralCode, ClientIP: c.RealIP()})
	if err != nil {
		return err
	}
	token, _, err := h.Auth.StartSession(ctx, u.ID)
	if err != nil {
		return err
	}
	web.SetSessionCookie(c, token, int(auth.SessionLifetime.Seconds()))
	return c.JSON(http.StatusOK, SessionAnswer{User: ProfileOf(u), PreviousSignInAt: u.PreviousSignInAt})
}

// SessionAnswer is the answer of the browser sign-in.
type SessionAnswer struct {
	User UserProfile `json:"user"`
	// PreviousSignInAt is the sign-in before this one, shown at sign-in.
	PreviousSignInAt *time.Time `json:"previousSignInAt" doc:"the sign-in before this one (null: this is the first)"`
}
