package contract_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ogen-go/ogen/ogenerrors"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/e2e/contract/oas"
)

// credentials give the ogen client a signed-in SDK client's token.
type credentials struct{ c *wager.Client }

func (s credentials) Bearer(context.Context, oas.OperationName) (oas.Bearer, error) {
	token, _ := s.c.Token()
	return oas.Bearer{Token: token}, nil
}

func (credentials) AppId(context.Context, oas.OperationName) (oas.AppId, error) {
	return oas.AppId{APIKey: "contract-test"}, nil
}

func (credentials) Session(context.Context, oas.OperationName) (oas.Session, error) {
	return oas.Session{}, ogenerrors.ErrSkipClientSecurity
}

// TestOgenClientDecodesEveryAnswerOfATour: a client that ogen generated
// from the OpenAPI document (it decodes strictly: a null, a number or a
// member where the document says otherwise fails the whole answer) reads
// every kind of resource after the scene, as a player and as the
// spectator, and decodes each answer as the document's success type.
func TestOgenClientDecodesEveryAnswerOfATour(t *testing.T) {
	sc := play(t)
	ctx := context.Background()
	client := func(c *wager.Client) *oas.Client {
		o, err := oas.NewClient(sc.s.URL, credentials{c})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	tr := &tour{ctx: ctx, sc: sc, first: client(sc.first), watcher: client(sc.watcher)}

	// Some ids the tour follows, read with the SDK.
	ticket, err := sc.first.API.PostSupportWithResponse(ctx, nil, api.SupportNewTicket{Subject: "A question", Message: "How do rematches work?"})
	must(t, "open a ticket", err)
	tr.ticketID = ticket.JSON201.Id
	_, err = sc.first.API.PostFriendsByUserIdWithResponse(ctx, sc.second.UserID(), nil)
	must(t, "ask a friend", err)

	reads := append(append(tr.gameReads(), tr.socialReads()...), tr.walletReads()...)
	decoded := 0
	for _, r := range reads {
		res, err := r.call()
		switch {
		case err != nil:
			t.Errorf("%s: %v", r.name, err)
		case isErrorAnswer(res):
			t.Errorf("%s: an error answer %T %+v", r.name, res, res)
		default:
			decoded++
		}
	}
	t.Logf("ogen decoded %d of %d answers", decoded, len(reads))
	if tr.notificationID == "" || tr.historyBefore == "" {
		t.Errorf("the tour found no notification id (%q) or history cursor (%q) to follow", tr.notificationID, tr.historyBefore)
	}
}

// tour is what the reads of the tour need: the scene, an ogen client of
// the first player's and of the watcher's, and the ids that earlier reads
// find for later ones.
type tour struct {
	ctx            context.Context
	sc             *scene
	first, watcher *oas.Client
	ticketID       string
	notificationID string
	historyBefore  string
}

// read is one call of the tour, named as its route.
type read struct {
	name string
	call func() (any, error)
}

// gameReads read the API's operations, games and their markets, bets,
// pots and donations.
func (tr *tour) gameReads() []read {
	return []read{
		{"GET /health", func() (any, error) { return tr.first.GetHealth(tr.ctx, oas.GetHealthParams{}) }},
		{"GET /version", func() (any, error) { return tr.first.GetVersion(tr.ctx, oas.GetVersionParams{}) }},
		{"GET /feature-flags", func() (any, error) { return tr.first.GetFeatureFlags(tr.ctx, oas.GetFeatureFlagsParams{}) }},
		{"GET /service_check_maintenance", func() (any, error) {
			return tr.first.GetServiceCheckMaintenance(tr.ctx, oas.GetServiceCheckMaintenanceParams{})
		}},
		{"GET /games/available", func() (any, error) { return tr.first.GetGamesAvailable(tr.ctx, oas.GetGamesAvailableParams{}) }},
		{"GET /games/metrics", func() (any, error) { return tr.first.GetGamesMetrics(tr.ctx, oas.GetGamesMetricsParams{}) }},
		{"GET /games/live", func() (any, error) { return tr.first.GetGamesLive(tr.ctx, oas.GetGamesLiveParams{}) }},
		{"GET /spectate/live-players", func() (any, error) {
			return tr.first.GetSpectateLivePlayers(tr.ctx, oas.GetSpectateLivePlayersParams{})
		}},
		{"GET /lobbies", func() (any, error) { return tr.first.GetLobbies(tr.ctx, oas.GetLobbiesParams{}) }},
		{"GET /challenges", func() (any, error) { return tr.first.GetChallenges(tr.ctx, oas.GetChallengesParams{}) }},
		{"GET /games/{id} (completed)", func() (any, error) { return tr.first.GetGamesById(tr.ctx, oas.GetGamesByIdParams{ID: tr.sc.staked}) }},
		{"GET /games/{id} (active)", func() (any, error) { return tr.first.GetGamesById(tr.ctx, oas.GetGamesByIdParams{ID: tr.sc.free}) }},
		{"GET /games/{id}/state", func() (any, error) {
			return tr.first.GetGamesByIdState(tr.ctx, oas.GetGamesByIdStateParams{ID: tr.sc.free})
		}},
		{"GET /games/{id}/events", func() (any, error) {
			return tr.first.GetGamesByIdEvents(tr.ctx, oas.GetGamesByIdEventsParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/market (resolved)", func() (any, error) {
			return tr.first.GetGamesByIdMarket(tr.ctx, oas.GetGamesByIdMarketParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/market (not resolved)", func() (any, error) {
			return tr.first.GetGamesByIdMarket(tr.ctx, oas.GetGamesByIdMarketParams{ID: tr.sc.free})
		}},
		{"GET /games/{id}/market/trades", func() (any, error) {
			return tr.first.GetGamesByIdMarketTrades(tr.ctx, oas.GetGamesByIdMarketTradesParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/market/positions", func() (any, error) {
			return tr.watcher.GetGamesByIdMarketPositions(tr.ctx, oas.GetGamesByIdMarketPositionsParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/market/orders", func() (any, error) {
			return tr.watcher.GetGamesByIdMarketOrders(tr.ctx, oas.GetGamesByIdMarketOrdersParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/bets", func() (any, error) {
			return tr.first.GetGamesByIdBets(tr.ctx, oas.GetGamesByIdBetsParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/pot", func() (any, error) {
			return tr.first.GetGamesByIdPot(tr.ctx, oas.GetGamesByIdPotParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/donations", func() (any, error) {
			return tr.first.GetGamesByIdDonations(tr.ctx, oas.GetGamesByIdDonationsParams{ID: tr.sc.staked})
		}},
		{"GET /games/{id}/rematch", func() (any, error) {
			return tr.first.GetGamesByIdRematch(tr.ctx, oas.GetGamesByIdRematchParams{ID: tr.sc.staked})
		}},
	}
}

// socialReads read chat, users, notifications, achievements, leaderboards
// and friends.
func (tr *tour) socialReads() []read {
	return []read{
		{"GET /chat/game/{id}/messages", func() (any, error) {
			return tr.first.GetChatByTypeByIdMessages(tr.ctx, oas.GetChatByTypeByIdMessagesParams{Type: "game", ID: tr.sc.staked})
		}},
		{"GET /chat/dm/threads", func() (any, error) { return tr.first.GetChatDmThreads(tr.ctx, oas.GetChatDmThreadsParams{}) }},
		{"GET /users/me", func() (any, error) { return tr.first.GetUsersMe(tr.ctx, oas.GetUsersMeParams{}) }},
		{"GET /users/{id}", func() (any, error) {
			return tr.first.GetUsersById(tr.ctx, oas.GetUsersByIdParams{ID: tr.sc.second.UserID()})
		}},
		{"GET /usernames/{username}", func() (any, error) {
			me, err := tr.first.GetUsersById(tr.ctx, oas.GetUsersByIdParams{ID: tr.sc.second.UserID()})
			if err != nil {
				return nil, err
			}
			return tr.first.GetUsernamesByUsername(tr.ctx, oas.GetUsernamesByUsernameParams{Username: me.(*oas.UserProfile).Username})
		}},
		{"GET /users/search", func() (any, error) { return tr.first.GetUsersSearch(tr.ctx, oas.GetUsersSearchParams{Username: "zz"}) }},
		{"GET /users/me/current-game", func() (any, error) { return tr.first.GetUsersMeCurrentGame(tr.ctx, oas.GetUsersMeCurrentGameParams{}) }},
		{"GET /users/{id}/current-game", func() (any, error) {
			return tr.first.GetUsersByIdCurrentGame(tr.ctx, oas.GetUsersByIdCurrentGameParams{ID: tr.sc.watcher.UserID()})
		}},
		{"GET /users/{id}/ratings", func() (any, error) {
			return tr.first.GetUsersByIdRatings(tr.ctx, oas.GetUsersByIdRatingsParams{ID: tr.sc.first.UserID()})
		}},
		{"GET /notifications", func() (any, error) {
			r, err := tr.first.GetNotifications(tr.ctx, oas.GetNotificationsParams{})
			if ok, _ := r.(*oas.GetNotificationsOKApplicationJSON); ok != nil && len(*ok) > 0 {
				tr.notificationID = (*ok)[0].ID
			}
			return r, err
		}},
		{"PATCH /notifications/{id}/read", func() (any, error) {
			return tr.first.PatchNotificationsByIdRead(tr.ctx, oas.PatchNotificationsByIdReadParams{ID: tr.notificationID})
		}},
		{"GET /notifications?before=", func() (any, error) {
			return tr.first.GetNotifications(tr.ctx, oas.GetNotificationsParams{Before: oas.NewOptString(tr.notificationID)})
		}},
		{"GET /activity/feed", func() (any, error) { return tr.first.GetActivityFeed(tr.ctx, oas.GetActivityFeedParams{}) }},
		{"GET /achievements", func() (any, error) { return tr.first.GetAchievements(tr.ctx, oas.GetAchievementsParams{}) }},
		{"GET /achievements/me", func() (any, error) { return tr.first.GetAchievementsMe(tr.ctx, oas.GetAchievementsMeParams{}) }},
		{"GET /achievements/user/{id}", func() (any, error) {
			return tr.first.GetAchievementsUserById(tr.ctx, oas.GetAchievementsUserByIdParams{ID: tr.sc.second.UserID()})
		}},
		{"GET /leaderboards/global", func() (any, error) { return tr.first.GetLeaderboardsGlobal(tr.ctx, oas.GetLeaderboardsGlobalParams{}) }},
		{"GET /leaderboards/game/{type}", func() (any, error) {
			return tr.first.GetLeaderboardsGameByType(tr.ctx, oas.GetLeaderboardsGameByTypeParams{Type: "rps"})
		}},
		{"GET /leaderboards/friends", func() (any, error) {
			return tr.first.GetLeaderboardsFriends(tr.ctx, oas.GetLeaderboardsFriendsParams{})
		}},
		{"GET /friends/{userId}", func() (any, error) {
			return tr.first.GetFriendsByUserId(tr.ctx, oas.GetFriendsByUserIdParams{UserId: tr.sc.first.UserID()})
		}},
		{"GET /friends/requests/incoming", func() (any, error) {
			return tr.first.GetFriendsRequestsIncoming(tr.ctx, oas.GetFriendsRequestsIncomingParams{})
		}},
	}
}

// walletReads read the wallet, referrals and support.
func (tr *tour) walletReads() []read {
	return []read{
		{"GET /wallets/me/balance", func() (any, error) { return tr.first.GetWalletsMeBalance(tr.ctx, oas.GetWalletsMeBalanceParams{}) }},
		{"GET /wallets/me/transactions", func() (any, error) {
			r, err := tr.first.GetWalletsMeTransactions(tr.ctx, oas.GetWalletsMeTransactionsParams{Limit: oas.NewOptInt64(2)})
			if page, _ := r.(*oas.GetWalletsMeTransactionsOKApplicationJSON); page != nil && len(*page) > 0 {
				tr.historyBefore = (*page)[len(*page)-1].ID
			}
			return r, err
		}},
		{"GET /wallets/me/transactions?before=", func() (any, error) {
			return tr.first.GetWalletsMeTransactions(tr.ctx, oas.GetWalletsMeTransactionsParams{Before: oas.NewOptString(tr.historyBefore)})
		}},
		{"GET /referrals/me", func() (any, error) { return tr.first.GetReferralsMe(tr.ctx, oas.GetReferralsMeParams{}) }},
		{"GET /referrals/me/tree", func() (any, error) { return tr.first.GetReferralsMeTree(tr.ctx, oas.GetReferralsMeTreeParams{}) }},
		{"GET /referrals/me/rewards", func() (any, error) { return tr.first.GetReferralsMeRewards(tr.ctx, oas.GetReferralsMeRewardsParams{}) }},
		{"GET /support/me", func() (any, error) { return tr.first.GetSupportMe(tr.ctx, oas.GetSupportMeParams{}) }},
		{"GET /support/me/{id}", func() (any, error) {
			return tr.first.GetSupportMeById(tr.ctx, oas.GetSupportMeByIdParams{ID: tr.ticketID})
		}},
	}
}

// isErrorAnswer reports whether an ogen result is one of the document's
// error answers (each a type defined as the Error schema) rather than a
// success.
func isErrorAnswer(res any) bool {
	t := reflect.TypeOf(res)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.ConvertibleTo(reflect.TypeFor[oas.Error]())
}
