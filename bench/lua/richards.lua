-- Are We Fast Yet "Richards": an operating-system task scheduler simulation (idle
-- task, worker, two handlers, two devices passing packets); a run ends with 23246
-- packets queued and 9297 holds. Packets and task control blocks are tables that
-- link to each other (nil: no packet, no task); each task runs its kind's function.
local IDLER, WORKER, HANDLER_A, HANDLER_B, DEVICE_A, DEVICE_B = 1, 2, 3, 4, 5, 6
local DEVICE_PACKET, WORK_PACKET = 0, 1

local tasks, task_list, current, current_id, queue_count, hold_count

local function new_packet(link, id, kind)
  return {link = link, id = id, kind = kind, datum = 1, data = {0, 0, 0, 0}}
end

local function append(packet, head)
  packet.link = nil
  if head == nil then return packet end
  local mouse = head
  local link = mouse.link
  while link ~= nil do
    mouse = link
    link = mouse.link
  end
  mouse.link = packet
  return head
end

local function wait()
  current.waiting = true
  return current
end

local function hold_self()
  hold_count = hold_count + 1
  current.holding = true
  return current.link
end

local function release(id)
  local t = tasks[id]
  t.holding = false
  if t.priority > current.priority then return t end
  return current
end

local function queue_packet(packet)
  local t = tasks[packet.id]
  queue_count = queue_count + 1
  packet.link = nil
  packet.id = current_id
  if t.input == nil then
    t.input = packet
    t.pending = true
    if t.priority > current.priority then return t end
  else
    t.input = append(packet, t.input)
  end
  return current
end

local function run_device(t, packet)
  if packet == nil then
    packet = t.device_pending
    if packet == nil then return wait() end
    t.device_pending = nil
    return queue_packet(packet)
  end
  t.device_pending = packet
  return hold_self()
end

local function run_handler(t, packet)
  if packet ~= nil then
    if packet.kind == WORK_PACKET then
      t.work_in = append(packet, t.work_in)
    else
      t.device_in = append(packet, t.device_in)
    end
  end
  local wp = t.work_in
  if wp == nil then return wait() end
  local count = wp.datum
  if count > 4 then
    t.work_in = wp.link
    return queue_packet(wp)
  end
  local dp = t.device_in
  if dp == nil then return wait() end
  t.device_in = dp.link
  dp.datum = wp.data[count]
  wp.datum = count + 1
  return queue_packet(dp)
end

local function run_idler(t)
  t.count = t.count - 1
  if t.count == 0 then return hold_self() end
  if t.control % 2 == 0 then
    t.control = t.control // 2
    return release(DEVICE_A)
  end
  t.control = ((t.control - 1) // 2) ~ 53256
  return release(DEVICE_B)
end

local function run_worker(t, packet)
  if packet == nil then return wait() end
  if t.destination == HANDLER_A then t.destination = HANDLER_B else t.destination = HANDLER_A end
  packet.id = t.destination
  packet.datum = 1
  for i = 1, 4 do
    t.count = t.count + 1
    if t.count > 26 then t.count = 1 end
    packet.data[i] = 65 + t.count - 1
  end
  return queue_packet(packet)
end

local function create_task(id, fn, priority, work, state)
  local t = {link = task_list, id = id, fn = fn, priority = priority, input = work,
             pending = state == "waiting_with_packet", waiting = state ~= "running",
             holding = false, control = 1, count = fn == run_idler and 10000 or 0,
             destination = HANDLER_A}
  task_list = t
  tasks[id] = t
end

local function run_task(t)
  local packet = nil
  if t.pending and t.waiting and not t.holding then
    packet = t.input
    t.input = packet.link
    t.pending = t.input ~= nil
    t.waiting = false
    t.holding = false
  end
  return t.fn(t, packet)
end

local function schedule()
  current = task_list
  while current ~= nil do
    if current.holding or (not current.pending and current.waiting) then
      current = current.link
    else
      current_id = current.id
      current = run_task(current)
    end
  end
end

local function run()
  tasks, task_list, current, current_id, queue_count, hold_count = {}, nil, nil, 0, 0, 0
  create_task(IDLER, run_idler, 0, nil, "running")
  local q = new_packet(nil, WORKER, WORK_PACKET)
  q = new_packet(q, WORKER, WORK_PACKET)
  create_task(WORKER, run_worker, 1000, q, "waiting_with_packet")
  q = new_packet(nil, DEVICE_A, DEVICE_PACKET)
  q = new_packet(q, DEVICE_A, DEVICE_PACKET)
  q = new_packet(q, DEVICE_A, DEVICE_PACKET)
  create_task(HANDLER_A, run_handler, 2000, q, "waiting_with_packet")
  q = new_packet(nil, DEVICE_B, DEVICE_PACKET)
  q = new_packet(q, DEVICE_B, DEVICE_PACKET)
  q = new_packet(q, DEVICE_B, DEVICE_PACKET)
  create_task(HANDLER_B, run_handler, 3000, q, "waiting_with_packet")
  create_task(DEVICE_A, run_device, 4000, nil, "waiting")
  create_task(DEVICE_B, run_device, 5000, nil, "waiting")
  schedule()
  return queue_count .. " " .. hold_count
end

local n = tonumber(arg[2] or "2")
local result = ""
for _ = 1, n do result = run() end
print(result)
