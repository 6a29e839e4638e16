// The console's few behaviours that htmx does not cover: copy buttons and the charts.
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const text = document.getElementById(button.dataset.copy).textContent;
  const done = () => { button.textContent = "Copied"; setTimeout(() => { button.textContent = "Copy"; }, 1500); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done);
  } else {  // plain http on another host: the clipboard API is not there
    const area = document.createElement("textarea");
    area.value = text;
    document.body.appendChild(area);
    area.select();
    document.execCommand("copy");
    area.remove();
    done();
  }
});

// Download CSV: the editor's statement posted by a plain form (a file, not an htmx swap).
document.addEventListener("click", (event) => {
  const button = event.target.closest("#csv");
  if (!button) return;
  const editor = button.closest("form");
  const form = document.createElement("form");
  form.method = "post";
  form.action = button.dataset.action;
  for (const name of ["sql", "database", "csrf"]) {
    const field = document.createElement("input");
    field.type = "hidden";
    field.name = name;
    field.value = editor.elements[name].value;
    form.append(field);
  }
  document.body.append(form);
  form.submit();
  form.remove();
});

const COLORS = ["#1a73e8", "#e37400", "#188038", "#d93025", "#9334e6", "#007b83", "#b06000"];

function chartData(data, name) {
  const values = data[name];
  if (Array.isArray(values)) return { labels: [name], columns: [values] };
  const labels = Object.keys(values);
  return { labels, columns: labels.map((label) => values[label]) };
}

function drawCharts() {
  const root = document.getElementById("charts");
  if (!root || typeof uPlot === "undefined") return;
  const plots = new Map();
  async function refresh() {
    let data;
    try {
      const response = await fetch(root.dataset.source, { credentials: "same-origin" });
      if (!response.ok) return;
      data = await response.json();
    } catch (error) {
      return;
    }
    for (const box of root.querySelectorAll(".chart")) {
      const { labels, columns } = chartData(data, box.dataset.series);
      const key = box.dataset.series + ":" + labels.join(",");
      const aligned = [data.time, ...columns];
      let entry = plots.get(box);
      if (!entry || entry.key !== key) {
        if (entry) entry.plot.destroy();
        box.textContent = "";
        const options = {
          width: Math.max(box.clientWidth, 300),
          height: 220,
          series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: true }))],
          axes: [{}, { size: 60 }],
        };
        entry = { key, plot: new uPlot(options, aligned, box) };
        plots.set(box, entry);
        if (!labels.length) box.append("No data yet.");
      } else {
        entry.plot.setData(aligned);
      }
    }
  }
  refresh();
  setInterval(refresh, 2000);
}

document.addEventListener("DOMContentLoaded", drawCharts);
