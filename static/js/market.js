// The game page's prediction market: the price chart of the first
// player's shares (lightweight-charts), grown by every live trade; the
// order form with what an order costs and pays before it is sent; and the
// viewer's shares and orders, fetched again after every change of the
// market, with cancel and redeem.
(function () {
  "use strict";
  const section = document.querySelector("[data-market-section]");
  if (!section) return;
  const gameId = section.dataset.gameId;
  const ONE = 1000000;

  const usdc = (minor) => window.wagerWallet.formatUSDC(minor);
  // parsePrice reads "0.62" as 620000; null when it is not a price.
  const parsePrice = (text) => {
    const m = /^\s*0?\.(\d{1,2})\s*$/.exec(text || "");
    if (!m) return null;
    const cents = Number(m[1].padEnd(2, "0"));
    return cents >= 1 && cents <= 99 ? cents * 10000 : null;
  };

  // The chart: one point per second, the last trade of that second.
  const chartBox = section.querySelector("[data-market-chart]");
  const empty = section.querySelector("[data-market-chart-empty]");
  let series = null;
  let lastTradeId = 0;
  let lastTime = 0;
  const addPoint = (time, price) => {
    if (!series || time < lastTime) return;
    series.update({ time, value: price / ONE });
    lastTime = time;
    if (empty) empty.hidden = true;
  };
  if (chartBox && window.LightweightCharts) {
    const LC = window.LightweightCharts;
    const chart = LC.createChart(chartBox, {
      autoSize: true,
      // The logo would add a <style> element, which the pages' CSP refuses:
      // the panel credits TradingView in a link of its own instead.
      layout: { background: { color: "transparent" }, textColor: "#cbd5e1", attributionLogo: false },
      grid: { vertLines: { color: "#1e293b" }, horzLines: { color: "#1e293b" } },
      timeScale: { timeVisible: true, secondsVisible: chartBox.clientWidth >= 480 },
      localization: { priceFormatter: (p) => p.toFixed(2) },
    });
    // autoSize follows the box's size; on a narrow box (a phone) the time
    // labels leave out the seconds so that they do not overlap.
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        chart.applyOptions({ timeScale: { secondsVisible: chartBox.clientWidth >= 480 } });
      }).observe(chartBox);
    }
    series = chart.addSeries(LC.LineSeries, { color: "#34d399", lineWidth: 2 });
    const outcome0 = chartBox.dataset.outcomeId;
    window.wagerWallet.apiGet("/games/" + gameId + "/market/trades?limit=200")
      .then((trades) => {
        const points = [];
        trades.reverse().forEach((t) => {
          const time = Math.floor(Date.parse(t.createdAt) / 1000);
          const price = t.outcomeId === outcome0 ? t.priceMinor : ONE - t.priceMinor;
          if (points.length && points[points.length - 1].time === time) points.pop();
          points.push({ time, value: price / ONE });
          lastTradeId = Math.max(lastTradeId, t.id);
        });
        if (points.length) {
          series.setData(points);
          lastTime = points[points.length - 1].time;
          if (empty) empty.hidden = true;
        }
      })
      .catch((err) => {
        if (empty) empty.textContent = "The price history could not be loaded: " + err.message;
      });
  }

  // The viewer's part, fetched again (one request at a time) after changes.
  let fetching = false;
  let again = false;
  const refreshMine = () => {
    if (!document.getElementById("market-mine") || !window.htmx) return;
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    window.htmx.ajax("GET", "/game/" + gameId + "/market/mine", { target: "#market-mine", swap: "outerHTML" }).finally(() => {
      fetching = false;
      if (again) {
        again = false;
        refreshMine();
      }
    });
  };

  document.body.addEventListener("htmx:oobAfterSwap", (e) => {
    // The event comes from the new panel (its detail names the old one).
    if (!e.target || e.target.id !== "market") return;
    const panel = e.target;
    const id = Number(panel.dataset.lastTradeId || 0);
    if (id > lastTradeId) {
      lastTradeId = id;
      addPoint(Number(panel.dataset.lastTradeAt), Number(panel.dataset.lastPrice0));
    }
    if (panel.dataset.status !== "open") document.querySelectorAll("[data-market-form-section]").forEach((el) => el.remove());
    refreshMine();
  });

  const say = (el, text, bad) => {
    if (!el) return;
    el.textContent = text;
    el.className = el.className.replace(/\btext-(rose|slate)-\d+\b/g, "").trim() + (bad ? " text-rose-400" : " text-slate-300");
  };

  // The order form: what it costs and pays, then the order.
  const form = section.querySelector("[data-market-form]");
  if (form) {
    const preview = form.querySelector("[data-market-preview]");
    const status = form.querySelector("[data-market-status]");
    const button = form.querySelector("button[type=submit]");
    const read = () => {
      const side = form.elements.side.value;
      const outcome = form.elements.outcome;
      const name = outcome.options[outcome.selectedIndex].text;
      const price = parsePrice(form.elements.price.value);
      const shares = /^\s*\d+\s*$/.test(form.elements.shares.value) ? Number(form.elements.shares.value) : null;
      return { side, outcomeId: outcome.value, name, price, shares, ioc: form.elements.ioc.checked };
    };
    const describe = () => {
      const o = read();
      if (o.price === null) return "The price is a whole number of cents from 0.01 to 0.99.";
      if (o.shares === null || o.shares < 1 || o.shares > 100000) return "Shares are a whole number from 1 to 100000.";
      if (o.side === "buy") {
        return "Costs at most " + usdc(o.price * o.shares) + " USDC; pays " + usdc(ONE * o.shares) + " USDC if " + o.name + " wins.";
      }
      return "Sells " + o.shares + " shares of " + o.name + " for at least " + usdc(o.price * o.shares) + " USDC.";
    };
    form.addEventListener("input", () => (preview.textContent = describe()));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const o = read();
      if (o.price === null || o.shares === null) {
        say(status, describe(), true);
        return;
      }
      button.disabled = true;
      say(status, "Placing the order…");
      try {
        const placed = await window.wagerWallet.api("/games/" + gameId + "/market/orders/" + o.side, {
          outcomeId: o.outcomeId, priceMinor: o.price, shares: o.shares, timeInForce: o.ioc ? "IOC" : "GTC",
        });
        const done = placed.order.filledShares;
        const verb = o.side === "buy" ? "Bought" : "Sold";
        let text = done > 0 ? verb + " " + done + " of " + o.shares + " shares of " + o.name + "." : "No match yet.";
        if (placed.order.status === "open") text += " " + (o.shares - done) + " wait on the book at " + usdc(o.price) + ".";
        if (placed.order.status === "cancelled") text += " The rest is cancelled.";
        say(status, text);
        refreshMine();
      } catch (err) {
        say(status, err && err.message ? err.message : String(err), true);
      } finally {
        button.disabled = false;
      }
    });
  }

  // Cancel and redeem, in the viewer's part (which is replaced as it changes).
  section.addEventListener("click", async (e) => {
    const cancel = e.target.closest("[data-cancel-order]");
    const redeem = e.target.closest("[data-redeem]");
    if (!cancel && !redeem) return;
    const status = section.querySelector("[data-market-mine-status]");
    const button = cancel || redeem;
    button.disabled = true;
    try {
      if (cancel) {
        await window.wagerWallet.request("DELETE", "/games/" + gameId + "/market/orders/" + cancel.dataset.cancelOrder);
        refreshMine();
      } else {
        const r = await window.wagerWallet.api("/games/" + gameId + "/market/redeem", {});
        say(status, "Redeemed " + usdc(r.redeemedMinor) + " USDC to your balance.");
        button.remove();
      }
    } catch (err) {
      say(status, err && err.message ? err.message : String(err), true);
      button.disabled = false;
    }
  });
})();
