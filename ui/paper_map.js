// The map of the conference on the page (ui/paper_map.py): every paper a dot on a <canvas>, coloured by its
// group, the current answer's papers large and outlined over the others (dimmed), a legend naming each group
// with its size (a click hides or shows the group), the title on hover, and a click on a paper sending its id
// to Python (the `click` event), which shows its card. Wheel zooms, dragging pans, a double click resets.
// Runs as the gr.HTML's js_on_load: `element` is its root, `props.value` the map's data as JSON
// (ui/map_data.py's map_data), `watch` runs a callback whenever Python sends a new map, `trigger` sends an event.
const canvas = element.querySelector('canvas');
const tip = element.querySelector('.rag-map-tip');
const legend = element.querySelector('.rag-map-legend');
const title = element.querySelector('.rag-map-title');
const HEIGHT = 640;  // CSS pixels; the width is the element's
const HIGHLIGHT = '#ffd400';
let map = null;  // the data (map_data's JSON, parsed), with `members`: the points of each group
let hidden = new Set();  // the groups the legend hides
let view = {zoom: 1, dx: 0, dy: 0};  // zoom and pan; kept when a new map comes (an answer, a filter)
let places = new Float32Array(0);  // each point's place on the canvas (CSS pixels, x then y), as last drawn
let drag = null;  // where a press started and the pan then, while the mouse is down

function receive(json) {
  map = json ? JSON.parse(json) : null;
  hidden = new Set();
  if (map) {
    map.members = map.groups.map(() => []);
    map.group.forEach((group, i) => map.members[group].push(i));
    const xs = map.x.length ? map.x : [0], ys = map.y.length ? map.y : [0];
    map.box = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  }
  title.textContent = map ? map.title : '';
  showLegend();
  draw();
}

// The transform from the map's coordinates to the canvas: the points fit with a margin, x and y scaled
// alike (a paper's neighbours look as near as they are), then the zoom and pan applied.
function transform(width) {
  const [x0, x1, y0, y1] = map.box;
  const base = Math.min((width - 20) / Math.max(x1 - x0, 1e-6), (HEIGHT - 20) / Math.max(y1 - y0, 1e-6));
  const scale = base * view.zoom;
  const cx = width / 2 + view.dx - ((x0 + x1) / 2) * scale, cy = HEIGHT / 2 + view.dy + ((y0 + y1) / 2) * scale;
  return [scale, cx, cy];
}

function draw() {
  const width = canvas.parentElement.clientWidth, ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(HEIGHT * ratio);
  canvas.style.height = HEIGHT + 'px';
  const context = canvas.getContext('2d');
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.clearRect(0, 0, width, HEIGHT);
  const count = map ? map.ids.length : 0;
  places = new Float32Array(2 * count);
  let drawn = 0;
  if (map && width > 0) {
    const [scale, cx, cy] = transform(width);
    for (let i = 0; i < count; i++) {
      places[2 * i] = cx + map.x[i] * scale;
      places[2 * i + 1] = cy - map.y[i] * scale;
    }
    const highlighted = map.highlight.filter((i) => !hidden.has(map.group[i]));
    context.globalAlpha = map.highlight.length ? 0.25 : 0.75;  // dimmed under an answer's papers
    map.members.forEach((members, group) => {
      if (hidden.has(group)) return;
      dots(context, members, map.radius, map.groups[group][1]);
      drawn += members.length;
    });
    context.globalAlpha = 1;
    context.strokeStyle = '#111';
    context.lineWidth = 1.5;
    dots(context, highlighted, 6.5, HIGHLIGHT, true);
  }
  canvas.dataset.points = String(drawn);  // what the tests and benchmarks/map.py wait for
  canvas.dataset.highlighted = String(map ? map.highlight.length : 0);
}

function dots(context, indexes, radius, colour, outlined = false) {
  context.fillStyle = colour;
  context.beginPath();
  for (const i of indexes) {
    context.moveTo(places[2 * i] + radius, places[2 * i + 1]);
    context.arc(places[2 * i], places[2 * i + 1], radius, 0, 2 * Math.PI);
  }
  context.fill();
  if (outlined) context.stroke();
}

function showLegend() {
  legend.replaceChildren();
  if (!map) return;
  const entry = (name, colour, group) => {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'rag-map-swatch';
    swatch.style.background = colour;
    item.append(swatch, document.createTextNode(name));
    if (group !== undefined) {
      item.title = 'Click to hide or show these papers';
      item.addEventListener('click', () => {
        hidden.has(group) ? hidden.delete(group) : hidden.add(group);
        item.classList.toggle('rag-map-hidden', hidden.has(group));
        draw();
      });
    }
    legend.append(item);
  };
  map.groups.forEach(([name, colour], group) => entry(name, colour, group));
  if (map.highlight.length) entry(map.highlight_name, HIGHLIGHT);
}

// The paper under the mouse: the nearest shown point within a few pixels of it (highlighted ones first), or -1.
function paperAt(x, y) {
  if (!map) return -1;
  const near = (i, reach) => !hidden.has(map.group[i]) && (places[2 * i] - x) ** 2 + (places[2 * i + 1] - y) ** 2 <= reach ** 2;
  const best = map.highlight.find((i) => near(i, 8));
  if (best !== undefined) return best;
  let found = -1, nearest = (map.radius + 4) ** 2;
  for (let i = 0; i < map.ids.length; i++) {
    const distance = (places[2 * i] - x) ** 2 + (places[2 * i + 1] - y) ** 2;
    if (distance <= nearest && !hidden.has(map.group[i])) [found, nearest] = [i, distance];
  }
  return found;
}

function hover(event) {
  const i = drag ? -1 : paperAt(event.offsetX, event.offsetY);
  canvas.style.cursor = i >= 0 ? 'pointer' : drag ? 'grabbing' : 'default';
  tip.hidden = i < 0;
  if (i < 0) return;
  tip.textContent = map.labels[i];  // text, never markup: a title can hold anything
  const left = Math.min(event.offsetX + 14, canvas.clientWidth - tip.offsetWidth - 4);
  tip.style.left = Math.max(0, left) + 'px';
  tip.style.top = (event.offsetY + 14) + 'px';
}

canvas.addEventListener('mousemove', (event) => {
  if (drag && event.buttons === 1) {
    view.dx = drag.dx + event.clientX - drag.x;
    view.dy = drag.dy + event.clientY - drag.y;
    drag.moved ||= Math.abs(event.clientX - drag.x) + Math.abs(event.clientY - drag.y) > 4;
    requestAnimationFrame(draw);
  }
  hover(event);
});
canvas.addEventListener('mousedown', (event) => {
  drag = {x: event.clientX, y: event.clientY, dx: view.dx, dy: view.dy, moved: false};
});
canvas.addEventListener('mouseup', (event) => {
  const clicked = drag && !drag.moved ? paperAt(event.offsetX, event.offsetY) : -1;
  drag = null;
  if (clicked >= 0) trigger('click', {paper: map.ids[clicked]});
});
canvas.addEventListener('mouseleave', () => { drag = null; tip.hidden = true; });
canvas.addEventListener('wheel', (event) => {
  if (!map) return;
  event.preventDefault();
  const factor = Math.exp(-event.deltaY * 0.0015), width = canvas.clientWidth;
  // the point under the mouse stays where it is
  view.dx = event.offsetX - width / 2 - (event.offsetX - width / 2 - view.dx) * factor;
  view.dy = event.offsetY - HEIGHT / 2 - (event.offsetY - HEIGHT / 2 - view.dy) * factor;
  view.zoom *= factor;
  tip.hidden = true;
  requestAnimationFrame(draw);
}, {passive: false});
canvas.addEventListener('dblclick', () => { view = {zoom: 1, dx: 0, dy: 0}; draw(); });
new ResizeObserver(() => draw()).observe(canvas.parentElement);
// For the tests (tests/interfaces/test_browser_map.py): the papers drawn, and where one of them is on the screen.
canvas.ragMap = {
  shown: () => (map ? map.ids.filter((_, i) => !hidden.has(map.group[i])) : []),
  place: (id) => {
    const i = map ? map.ids.indexOf(id) : -1, box = canvas.getBoundingClientRect();
    return i < 0 ? null : [box.left + places[2 * i], box.top + places[2 * i + 1]];
  },
};
watch('value', () => receive(props.value));
receive(props.value);
